package windowdedupe_test

import (
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/examples/libraries/windowdedupe"
	"github.com/idemcheck/idemcheck/impl/adapter/synctime"
	"github.com/idemcheck/idemcheck/impl/contract/clock"
	"github.com/idemcheck/idemcheck/impl/contract/store"
	"github.com/idemcheck/idemcheck/impl/contract/store/storetest"
	"github.com/idemcheck/idemcheck/impl/system"
	"github.com/idemcheck/idemcheck/linearizability"
	"github.com/idemcheck/idemcheck/properties"
)

// window is how long the repository remembers a processed operation, as a
// team would configure it: longer than any redelivery of the broker.
const window = 2 * time.Minute

// declared says so to every check: the library expires results itself.
func declared(w time.Duration) store.Conventions {
	return store.Conventions{Expiry: store.ExpiryByLibrary, ExpiryMs: w.Milliseconds()}
}

func open(c clock.Source) store.Store { return windowdedupe.New(synctime.NowFunc(c), window) }

func TestContract(t *testing.T) {
	storetest.Run(t, func(t *testing.T, c clock.Source) store.Store { return open(c) }, declared(window))
}

func TestInvariants(t *testing.T) {
	conv := declared(window)
	properties.Conformance(t, system.WithStore("windowdedupe", func(c clock.Source) (store.Store, error) { return open(c), nil }),
		properties.Options{Conventions: &conv, Checks: 100})
}

// A recording moves time by seconds: a window of 30 ms forgets operations
// within it, and the model knows when each must go.
func TestLinearizable(t *testing.T) {
	const short = 30 * time.Millisecond
	linearizability.CheckStore(t, func(c clock.Source) store.Store { return windowdedupe.New(synctime.NowFunc(c), short) },
		linearizability.WithConventions(declared(short)), linearizability.WithOps(2_000))
}

// Undeclared, the same repository is flagged: the contract expects its
// processed records to stay until a cleanup removes them.
func TestUndeclaredExpiryIsFlagged(t *testing.T) {
	const short = 30 * time.Millisecond
	for seed := uint64(1); seed <= 3; seed++ {
		cfg := linearizability.DefaultConfig()
		cfg.Ops, cfg.Keys, cfg.Seed = 2_000, 100, seed
		h, err := linearizability.Record(t.Context(), func(c clock.Source) store.Store { return windowdedupe.New(synctime.NowFunc(c), short) }, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if r := linearizability.Check(h, time.Minute); r.Verdict == linearizability.Violation {
			return
		}
	}
	t.Fatal("a repository that forgets by itself passed as one that keeps its records until a cleanup")
}

// Version 1 forgot an operation a window after its attempt started, not
// after it finished: held to the declared window, it is caught.
func TestVersion1IsCaught(t *testing.T) {
	const short = 30 * time.Millisecond
	for seed := uint64(1); seed <= 5; seed++ {
		cfg := linearizability.DefaultConfig()
		cfg.Ops, cfg.Keys, cfg.Seed, cfg.Conventions = 2_000, 100, seed, declared(short)
		h, err := linearizability.Record(t.Context(), func(c clock.Source) store.Store { return windowdedupe.NewV1(synctime.NowFunc(c), short) }, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if r := linearizability.Check(h, time.Minute); r.Verdict == linearizability.Violation {
			t.Logf("caught with seed %d: %s", seed, r)
			return
		}
	}
	t.Fatal("version 1 survived five recordings")
}
