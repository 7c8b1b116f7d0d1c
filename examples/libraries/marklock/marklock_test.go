package marklock_test

import (
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/examples/libraries/marklock"
	"github.com/idemcheck/idemcheck/faults/scenario"
	"github.com/idemcheck/idemcheck/impl/adapter/synctime"
	"github.com/idemcheck/idemcheck/impl/contract/clock"
	"github.com/idemcheck/idemcheck/impl/contract/store"
	"github.com/idemcheck/idemcheck/impl/contract/store/storetest"
	"github.com/idemcheck/idemcheck/impl/system"
	"github.com/idemcheck/idemcheck/linearizability"
	"github.com/idemcheck/idemcheck/properties"
)

// abandon is how old a mark must be to be taken for a dead consumer's, as
// a team would configure it: longer than any handler runs.
const abandon = 30 * time.Second

// library describes the table once for every check: it reads time.Now,
// so each rule, scenario and recording plays in a testing/synctest bubble
// of its own, whose clock follows the harness's.
func library(newTable func(time.Duration) *marklock.Table, abandon time.Duration) synctime.Library {
	return synctime.Library{Open: func() (store.Store, error) { return newTable(abandon), nil }}
}

// declared are its conventions: marks with no lease, swept abandon after
// they were made, and deleted by a failure.
func declared(abandon time.Duration) store.Conventions {
	return store.Conventions{Lease: store.LeaseNone, UnsettledExpiryMs: abandon.Milliseconds(), FailedAttempt: store.FailedAttemptDeleted}
}

func TestContract(t *testing.T) {
	storetest.Run(t, library(marklock.New, abandon), declared(abandon))
}

func TestInvariants(t *testing.T) {
	conv := declared(abandon)
	properties.Conformance(t, system.WithTimeNowStore("marklock", library(marklock.New, abandon)), properties.Options{Conventions: &conv, Checks: 100})
}

// The law a mark that nothing sweeps breaks, on more scenarios.
func TestNothingLost(t *testing.T) {
	conv := declared(abandon)
	properties.CheckProperty(t, system.WithTimeNowStore("marklock", library(marklock.New, abandon)), "nothing-lost",
		properties.Options{Conventions: &conv, Checks: 500})
}

// A recording's marks are swept after 50 ms: some are completed or
// released before, others taken for abandoned and claimed afresh.
func TestLinearizable(t *testing.T) {
	linearizability.CheckStore(t, library(marklock.New, 50*time.Millisecond), linearizability.WithConventions(declared(50*time.Millisecond)),
		linearizability.WithOps(2_000))
}

// Undeclared, the table is flagged: the contract expects a claim to hold
// for the lease it asked for, its record to show it, and to be taken over
// once it ran out.
func TestUndeclaredIsFlagged(t *testing.T) {
	open := library(marklock.New, 20*time.Millisecond).ConcurrentStore()
	var r linearizability.Result
	leak, err := synctime.Test(t, func(t *testing.T) {
		cfg := linearizability.DefaultConfig()
		cfg.Ops, cfg.Keys = 2_000, 100
		h, err := linearizability.Record(t.Context(), func(c clock.Source) store.Store {
			s, err := open(c)
			if err != nil {
				t.Fatal(err)
			}
			return s
		}, cfg)
		if err != nil {
			t.Fatal(err)
		}
		r = linearizability.Check(h, time.Minute)
	})
	if err != nil || leak != nil {
		t.Fatalf("leak %v, error %v", leak, err)
	}
	if r.Verdict != linearizability.Violation {
		t.Fatalf("undeclared: %s, want a violation", r)
	}
}

// Version 1 never swept: a consumer that died left its mark for ever.
// Held to its declared sweep, it is caught by the invariants — the event
// is stuck — and by the linearizability check.
func TestVersion1IsCaught(t *testing.T) {
	conv := declared(abandon)
	v1 := system.WithTimeNowStore("marklock-v1", library(marklock.NewV1, abandon))
	v1.Consumption.Conventions = conv
	lost, _ := properties.ByName("nothing-lost")
	res := properties.Hunt(v1, properties.HuntOptions{Kind: scenario.KindConsumption, Properties: []properties.Property{lost}, Checks: 2_000, Seed: 1, T: t})
	if !res.Failed || res.Law != "nothing-lost/not-stuck" {
		t.Fatalf("version 1: failed=%v law=%q, want nothing-lost/not-stuck", res.Failed, res.Law)
	}
	t.Logf("caught by %s after %d scenarios:\n%s", res.Law, res.Checks, properties.Report(res.Verdict, res.Outcome, properties.ReportOptions{}))
}
