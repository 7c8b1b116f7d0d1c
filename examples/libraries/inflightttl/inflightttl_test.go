package inflightttl_test

import (
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/examples/libraries/inflightttl"
	"github.com/idemcheck/idemcheck/faults/scenario"
	"github.com/idemcheck/idemcheck/impl/adapter/synctime"
	"github.com/idemcheck/idemcheck/impl/contract/clock"
	"github.com/idemcheck/idemcheck/impl/contract/store"
	"github.com/idemcheck/idemcheck/impl/contract/store/storetest"
	"github.com/idemcheck/idemcheck/impl/system"
	"github.com/idemcheck/idemcheck/linearizability"
	"github.com/idemcheck/idemcheck/properties"
)

// The expirations as a team would configure them: a record in flight
// goes 10 s after its claim (its worker's deadline), a result 10 minutes
// after it completed (longer than any redelivery of the broker).
const (
	inFlight = 10 * time.Second
	result   = 10 * time.Minute
)

// declared says so to every check.
func declared(inFlight, result time.Duration) store.Conventions {
	return store.Conventions{UnsettledExpiryMs: inFlight.Milliseconds(), Expiry: store.ExpiryByLibrary, ExpiryMs: result.Milliseconds()}
}

func open(c clock.Source) store.Store { return inflightttl.New(synctime.ClockOf(c), inFlight, result) }

func TestContract(t *testing.T) {
	storetest.Run(t, func(t *testing.T, c clock.Source) store.Store { return open(c) }, declared(inFlight, result))
}

func TestInvariants(t *testing.T) {
	conv := declared(inFlight, result)
	properties.Conformance(t, system.WithStore("inflightttl", func(c clock.Source) (store.Store, error) { return open(c), nil }),
		properties.Options{Conventions: &conv, Checks: 100})
}

// An expiration in flight shorter than the scenarios' leases: a worker
// loses its record while it works, and the key is claimed afresh under
// it, which the declaration allows.
func TestInvariantsShortInFlight(t *testing.T) {
	conv := declared(150*time.Millisecond, result)
	properties.Conformance(t, system.WithStore("inflightttl-150ms", func(c clock.Source) (store.Store, error) {
		return inflightttl.New(synctime.ClockOf(c), 150*time.Millisecond, result), nil
	}), properties.Options{Conventions: &conv, Checks: 300})
}

// A recording's leases run 2–40 ms: an expiration in flight of 20 ms cuts
// some of them short and outlasts others.
func TestLinearizable(t *testing.T) {
	const short = 20 * time.Millisecond
	newRepo := func(c clock.Source) store.Store { return inflightttl.New(synctime.ClockOf(c), short, result) }
	linearizability.CheckStore(t, newRepo, linearizability.WithConventions(declared(short, result)), linearizability.WithOps(2_000))
}

// caught records the repository built by newRepo with 20 ms in flight,
// held to conv, and reports whether some seed of five shows a violation.
func caught(t *testing.T, newRepo func(inflightttl.Clock, time.Duration, time.Duration) *inflightttl.Repo, conv store.Conventions) bool {
	t.Helper()
	for seed := uint64(1); seed <= 5; seed++ {
		cfg := linearizability.DefaultConfig()
		cfg.Ops, cfg.Keys, cfg.Seed, cfg.Conventions = 2_000, 100, seed, conv
		h, err := linearizability.Record(t.Context(), func(c clock.Source) store.Store { return newRepo(synctime.ClockOf(c), 20*time.Millisecond, result) }, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if r := linearizability.Check(h, time.Minute); r.Verdict == linearizability.Violation {
			t.Logf("caught with seed %d: %s", seed, r)
			return true
		}
	}
	return false
}

// Undeclared, the expiration in flight is flagged: the contract expects a
// record to stay until it is taken over or settled.
func TestUndeclaredInFlightExpiryIsFlagged(t *testing.T) {
	if !caught(t, inflightttl.New, store.Conventions{Expiry: store.ExpiryByLibrary, ExpiryMs: result.Milliseconds()}) {
		t.Fatal("a repository whose records in flight expire passed as one whose records wait to be taken over")
	}
}

// Version 1's tokens were its records' versions, which start again when
// an expired record is replaced: the worker that held the expired one
// commits under the new holder's token. The invariants catch the second
// credit; the linearizability check, the token reused.
func TestVersion1IsCaught(t *testing.T) {
	conv := declared(inFlight, result)
	v1 := system.WithStoreConventions("inflightttl-v1", conv, func(c clock.Source) (store.Store, error) {
		return inflightttl.NewV1(synctime.ClockOf(c), inFlight, result), nil
	})
	res := properties.Hunt(v1, properties.HuntOptions{Kind: scenario.KindConsumption, Properties: properties.ForKind(scenario.KindConsumption), Checks: 3_000, Seed: 1})
	if !res.Failed {
		t.Fatalf("version 1 survived %d scenarios of the invariants", res.Checks)
	}
	t.Logf("caught by %s after %d scenarios:\n%s", res.Law, res.Checks, properties.Report(res.Verdict, res.Outcome, properties.ReportOptions{}))
	if !caught(t, inflightttl.NewV1, declared(20*time.Millisecond, result)) {
		t.Fatal("version 1 survived five recordings")
	}
}
