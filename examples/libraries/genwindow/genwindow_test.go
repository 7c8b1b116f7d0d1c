package genwindow_test

import (
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/examples/libraries/genwindow"
	"github.com/idemcheck/idemcheck/faults/scenario"
	"github.com/idemcheck/idemcheck/impl/adapter/synctime"
	"github.com/idemcheck/idemcheck/impl/contract/clock"
	"github.com/idemcheck/idemcheck/impl/contract/store"
	"github.com/idemcheck/idemcheck/impl/contract/store/storetest"
	"github.com/idemcheck/idemcheck/impl/system"
	"github.com/idemcheck/idemcheck/linearizability"
	"github.com/idemcheck/idemcheck/properties"
)

// window is how long the repository remembers a processed operation at
// least, as a team would configure it: longer than any redelivery of the
// broker.
const window = 2 * time.Minute

// declared says so to every check: the repository forgets an operation
// itself, between one window and one and a half after it finished.
func declared(w time.Duration) store.Conventions {
	return store.Conventions{Expiry: store.ExpiryByLibrary, ExpiryMs: w.Milliseconds(), ExpiryLatestMs: w.Milliseconds() * 3 / 2}
}

func open(c clock.Source) store.Store { return genwindow.New(synctime.NowFunc(c), window) }

func target() system.Target {
	return system.WithStore("genwindow", func(c clock.Source) (store.Store, error) { return open(c), nil })
}

func TestContract(t *testing.T) {
	storetest.Run(t, func(t *testing.T, c clock.Source) store.Store { return open(c) }, declared(window))
}

func TestInvariants(t *testing.T) {
	conv := declared(window)
	properties.Conformance(t, target(), properties.Options{Conventions: &conv, Checks: 100})
}

// The law a window's removals put at stake, on more scenarios.
func TestRetentionWindow(t *testing.T) {
	conv := declared(window)
	properties.CheckProperty(t, target(), "single-credit", properties.Options{Conventions: &conv, Checks: 1_000})
}

// A recording moves time by seconds: a window of 30 ms forgets operations
// within it, and the model knows the range in which each must go.
func TestLinearizable(t *testing.T) {
	const short = 30 * time.Millisecond
	linearizability.CheckStore(t, func(c clock.Source) store.Store { return genwindow.New(synctime.NowFunc(c), short) },
		linearizability.WithConventions(declared(short)), linearizability.WithOps(2_000))
}

// Declared to forget at exactly the window, the same repository is
// flagged: its removals come later, up to half a window, as a sweep's do.
func TestExactExpiryIsFlagged(t *testing.T) {
	const short = 30 * time.Millisecond
	exact := declared(short)
	exact.ExpiryLatestMs = 0
	for seed := uint64(1); seed <= 3; seed++ {
		cfg := linearizability.DefaultConfig()
		cfg.Ops, cfg.Keys, cfg.Seed, cfg.Conventions = 2_000, 100, seed, exact
		h, err := linearizability.Record(t.Context(), func(c clock.Source) store.Store { return genwindow.New(synctime.NowFunc(c), short) }, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if r := linearizability.Check(h, time.Minute); r.Verdict == linearizability.Violation {
			return
		}
	}
	t.Fatal("a repository whose removals come in a range passed as one that removes at an instant")
}

// Version 1 kept two generations: an operation went between half a
// window and one after it finished. Held to its declared window, it is
// caught by the invariants — a redelivery inside the window is processed
// again — and by the linearizability check.
func TestVersion1IsCaught(t *testing.T) {
	conv := declared(window)
	v1 := system.WithStoreConventions("genwindow-v1", conv, func(c clock.Source) (store.Store, error) {
		return genwindow.NewV1(synctime.NowFunc(c), window), nil
	})
	single, _ := properties.ByName("single-credit")
	res := properties.Hunt(v1, properties.HuntOptions{Kind: scenario.KindConsumption, Properties: []properties.Property{single}, Checks: 2_000, Seed: 1})
	if !res.Failed || res.Law != "single-credit/retention-window" {
		t.Fatalf("version 1: failed=%v law=%q, want single-credit/retention-window", res.Failed, res.Law)
	}
	t.Logf("caught by %s after %d scenarios:\n%s", res.Law, res.Checks, properties.Report(res.Verdict, res.Outcome, properties.ReportOptions{}))

	const short = 30 * time.Millisecond
	for seed := uint64(1); seed <= 5; seed++ {
		cfg := linearizability.DefaultConfig()
		cfg.Ops, cfg.Keys, cfg.Seed, cfg.Conventions = 2_000, 100, seed, declared(short)
		h, err := linearizability.Record(t.Context(), func(c clock.Source) store.Store { return genwindow.NewV1(synctime.NowFunc(c), short) }, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if r := linearizability.Check(h, time.Minute); r.Verdict == linearizability.Violation {
			t.Logf("linearizability: caught with seed %d: %s", seed, r)
			return
		}
	}
	t.Fatal("version 1 survived five recordings")
}
