package linearizability

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/idemcheck/idemcheck/impl/adapter/synctime"
	"github.com/idemcheck/idemcheck/impl/contract/clock"
	"github.com/idemcheck/idemcheck/impl/contract/store"
)

// Factory is what CheckStore checks: a constructor that builds the store
// over the recording's shared clock, or a store library that reads time.Now
// and takes no clock (synctime.Library).
type Factory interface {
	func(clock.Source) store.Store | synctime.Library
}

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
//
// A store library that reads time.Now is passed as a synctime.Library: the
// recording then plays as CheckTimeNowStore plays it, in a testing/synctest
// bubble, which needs t to be a *testing.T.
func CheckStore[F Factory](t testing.TB, newStore F, opts ...Option) Result {
	t.Helper()
	switch f := any(newStore).(type) {
	case synctime.Library:
		tt, ok := t.(*testing.T)
		if !ok {
			t.Fatalf("linearizability: a synctime.Library plays in a testing/synctest bubble, which needs a *testing.T, not %T", t)
			return Result{}
		}
		return CheckTimeNowStore(tt, f, opts...)
	case func(clock.Source) store.Store:
		return checkClocked(t, f, opts)
	}
	return Result{}
}

func checkClocked(t testing.TB, newStore func(clock.Source) store.Store, opts []Option) Result {
	t.Helper()
	cfg := configOf(opts)
	h, err := Record(context.Background(), newStore, cfg)
	if err != nil {
		t.Fatalf("linearizability: recording: %v", err)
		return Result{}
	}
	return judge(t, h, cfg)
}

func configOf(opts []Option) Config {
	cfg := DefaultConfig()
	for _, o := range opts {
		o(&cfg)
	}
	return cfg
}

// judge checks h and fails t unless it is linearizable.
func judge(t testing.TB, h History, cfg Config) Result {
	t.Helper()
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

// CheckTimeNowStore (what CheckStore does with a synctime.Library) is CheckStore for a store library that reads time.Now
// and takes no clock (synctime.Library): the whole recording plays in a
// testing/synctest bubble of its own, whose clock the library's wrapper
// moves with the shared virtual clock the clients advance. Clients race to
// move it, so a store may read a time a little ahead of the virtual clock;
// the check judges the times the store reports, which still only move
// forward. A goroutine the library leaves running after the recording (the
// store is closed, store.Closer) fails t as a leak, unless lib.Lingering
// says why it may.
//
//	linearizability.CheckTimeNowStore(t, synctime.Library{Open: func() (store.Store, error) { return mylib.New(), nil }})
func CheckTimeNowStore(t *testing.T, lib synctime.Library, opts ...Option) Result {
	t.Helper()
	if err := lib.Validate(); err != nil {
		t.Fatalf("linearizability: %v", err)
	}
	open := lib.ConcurrentStore()
	cfg := configOf(opts)
	var h History
	var recErr error
	// Only the recording plays in the bubble: the check after it is the
	// harness's own work, timed (and timed out) by the machine's clock.
	leak, err := synctime.Test(t, func(t *testing.T) {
		h, recErr = Record(context.Background(), func(c clock.Source) store.Store {
			s, err := open(c)
			if err != nil {
				t.Fatalf("linearizability: opening the store: %v", err)
			}
			return s
		}, cfg)
	})
	switch {
	case err != nil:
		t.Fatalf("linearizability: %v", err)
	case recErr != nil:
		t.Fatalf("linearizability: recording: %v", recErr)
	case leak != nil && lib.Lingering == "":
		t.Errorf("linearizability: %v", leak)
	case leak != nil:
		t.Logf("linearizability: %d goroutine(s) left running, tolerated: %s", leak.Goroutines, lib.Lingering)
	}
	return judge(t, h, cfg)
}
