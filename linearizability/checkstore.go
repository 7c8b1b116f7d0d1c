package linearizability

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/idemcheck/idemcheck/impl/contract/clock"
	"github.com/idemcheck/idemcheck/impl/contract/store"
)

// CheckStore checks, from another implementation's test, that its store is
// linearizable: it records a concurrent history against a store built by
// newStore (DefaultConfig changed by opts), checks it, and fails t unless
// the verdict is Linearizable. On a violation it writes the annotated HTML
// visualization and logs its path; on Unknown it fails too, because a check
// that timed out has proven nothing. It returns the result for further
// assertions.
//
//	func TestLinearizable(t *testing.T) {
//		linearizability.CheckStore(t, func(c clock.Source) store.Store { return mystore.New(c) })
//	}
func CheckStore(t testing.TB, newStore func(clock.Source) store.Store, opts ...Option) Result {
	t.Helper()
	cfg := DefaultConfig()
	for _, o := range opts {
		o(&cfg)
	}
	h, err := Record(context.Background(), newStore, cfg)
	if err != nil {
		t.Fatalf("linearizability: recording: %v", err)
		return Result{}
	}
	r := Check(h, cfg.CheckTimeout)
	st := h.Stats()
	t.Logf("linearizability: %s; %d clients, seed %d; %d acquired (%d takeovers), %d locked, %d commits, %d stale, %d ambiguous; checked in %v",
		r, st.Clients, cfg.Seed, st.Acquired, st.Takeovers, st.Locked, st.Commits, st.Stale, st.Ambiguous, r.Elapsed)
	switch r.Verdict {
	case Linearizable:
		return r
	case Violation:
		for _, e := range r.Explanations {
			t.Logf("  %s", e)
		}
		path, err := writeArtifact(cfg, r)
		if err != nil {
			t.Logf("linearizability: writing the visualization: %v", err)
		} else {
			t.Logf("linearizability: visualization of the violation: %s", path)
		}
	}
	t.Fatalf("linearizability: %s", r)
	return r
}

// writeArtifact writes the visualization of r into cfg.ArtifactDir, or a new
// directory under the system's temporary directory that outlives the test.
func writeArtifact(cfg Config, r Result) (string, error) {
	dir := cfg.ArtifactDir
	if dir == "" {
		d, err := os.MkdirTemp("", "idemcheck-linearizability-")
		if err != nil {
			return "", err
		}
		dir = d
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	path := filepath.Join(dir, fmt.Sprintf("violation-seed%d.html", cfg.Seed))
	if err := WriteVisualization(path, r); err != nil {
		return "", err
	}
	return path, nil
}
