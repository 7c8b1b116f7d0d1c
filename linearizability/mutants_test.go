package linearizability

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/impl/contract/clock"
	"github.com/idemcheck/idemcheck/impl/contract/store"
	"github.com/idemcheck/idemcheck/impl/system"
)

// concurrencyMutant is a store mutant the linearizability check must catch.
type concurrencyMutant struct {
	Name, Bug string
	New       func(clock.Source) store.Store
	// Conv are the conventions the mutant declares, which the check holds
	// it to.
	Conv store.Conventions
}

// concurrencyMutants lists the registered mutants killed by the
// linearizability check.
func concurrencyMutants(t *testing.T) []concurrencyMutant {
	var out []concurrencyMutant
	for _, m := range system.Mutants() {
		if m.KilledBy != "linearizability" {
			continue
		}
		newStore := m.Consumption.NewStore
		out = append(out, concurrencyMutant{Name: m.Name, Bug: m.Bug, Conv: m.Consumption.Conventions, New: func(c clock.Source) store.Store {
			s, err := newStore(c)
			if err != nil {
				t.Fatal(err)
			}
			return s
		}})
	}
	if len(out) < 4 {
		t.Fatalf("only %d mutants are registered for the linearizability check", len(out))
	}
	return out
}

// huntAttempts bounds the recordings per mutant. The interleaving is the
// scheduler's, so one recording could in principle miss a bug; each of these
// mutants is caught on the first recording in practice, and five independent
// misses in a row would mean the workload no longer reaches the bug.
const huntAttempts = 5

// TestMutantsCaught records each mutant from 8 clients and requires a
// Violation within huntAttempts seeds. Unknown does not count as caught.
func TestMutantsCaught(t *testing.T) {
	for _, m := range concurrencyMutants(t) {
		t.Run(m.Name, func(t *testing.T) {
			var verdicts []string
			for seed := uint64(1); seed <= huntAttempts; seed++ {
				cfg := testConfig(seed)
				cfg.Conventions = m.Conv
				h := record(t, m.New, cfg)
				r := Check(h, time.Minute)
				verdicts = append(verdicts, fmt.Sprintf("seed %d: %s", seed, r))
				if r.Verdict == Violation {
					if len(r.Explanations) == 0 {
						t.Fatalf("violation without an explanation: %s", r)
					}
					t.Logf("caught: %s\n  %s", r, r.Explanations[0])
					return
				}
			}
			t.Fatalf("%s survived (%s):\n%s", m.Name, m.Bug, strings.Join(verdicts, "\n"))
		})
	}
}

// fakeTB is a testing.TB that records what CheckStore says instead of
// failing the real test; Fatalf ends the goroutine as testing's does.
type fakeTB struct {
	testing.TB
	mu     sync.Mutex
	logs   []string
	failed string
}

func (f *fakeTB) Helper() {}

func (f *fakeTB) Logf(format string, args ...any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.logs = append(f.logs, fmt.Sprintf(format, args...))
}

func (f *fakeTB) Fatalf(format string, args ...any) {
	f.mu.Lock()
	f.failed = fmt.Sprintf(format, args...)
	f.mu.Unlock()
	runtime.Goexit()
}

func runFake(t *testing.T, fn func(tb testing.TB)) *fakeTB {
	f := &fakeTB{TB: t}
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		fn(f)
	}()
	<-finished
	return f
}

// TestCheckStoreFailsMutant runs the one-call entry point on a mutant: it
// must fail the test, write the visualization, and log its path.
func TestCheckStoreFailsMutant(t *testing.T) {
	dir := t.TempDir()
	var m concurrencyMutant
	for _, c := range concurrencyMutants(t) {
		if c.Name == "fail-resets-token" {
			m = c
		}
	}
	var f *fakeTB
	for seed := uint64(1); seed <= huntAttempts; seed++ {
		f = runFake(t, func(tb testing.TB) {
			CheckStore(tb, m.New, WithOps(testOps), WithSeed(seed), WithArtifactDir(dir))
		})
		if f.failed != "" {
			break
		}
	}
	if !strings.HasPrefix(f.failed, "linearizability: violation:") {
		t.Fatalf("CheckStore on %s: failure %q, logs:\n%s", m.Name, f.failed, strings.Join(f.logs, "\n"))
	}
	var path string
	for _, l := range f.logs {
		if p, ok := strings.CutPrefix(l, "linearizability: visualization of the violation: "); ok {
			path = p
		}
	}
	if path == "" {
		t.Fatalf("no visualization path logged:\n%s", strings.Join(f.logs, "\n"))
	}
	page, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(page), `"Tag":"`+AnnotationTag) {
		t.Fatalf("%s has no annotation of the violating operations", path)
	}
}

// TestCheckStoreUnknownFails shows an Unknown verdict fails the test: a
// check cut short by its timeout is not a pass.
func TestCheckStoreUnknownFails(t *testing.T) {
	f := runFake(t, func(tb testing.TB) {
		CheckStore(tb, newReference, WithOps(testOps), WithCheckTimeout(time.Nanosecond))
	})
	if !strings.HasPrefix(f.failed, "linearizability: unknown:") {
		t.Fatalf("failure %q", f.failed)
	}
}
