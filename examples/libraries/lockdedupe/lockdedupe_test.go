package lockdedupe_test

import (
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/examples/libraries/lockdedupe"
	"github.com/idemcheck/idemcheck/impl/adapter/synctime"
	"github.com/idemcheck/idemcheck/impl/contract/clock"
	"github.com/idemcheck/idemcheck/impl/contract/store"
	"github.com/idemcheck/idemcheck/impl/contract/store/storetest"
	"github.com/idemcheck/idemcheck/impl/system"
	"github.com/idemcheck/idemcheck/linearizability"
	"github.com/idemcheck/idemcheck/properties"
)

// conventions are the library's documented ones.
var conventions = store.Conventions{
	FailedAttempt: store.FailedAttemptKeptMark,
	ExpiredLease:  store.ExpiredLeaseVanishes,
	LateCommit:    store.LateCommitRefused,
	Refusal:       store.RefusalOneError,
}

func open(c clock.Source) store.Store { return lockdedupe.New(synctime.NowFunc(c)) }

func TestContract(t *testing.T) {
	storetest.Run(t, func(t *testing.T, c clock.Source) store.Store { return open(c) }, conventions)
}

func TestInvariants(t *testing.T) {
	properties.Conformance(t, system.WithStore("lockdedupe", func(c clock.Source) (store.Store, error) { return open(c), nil }),
		properties.Options{Conventions: &conventions, Checks: 100})
}

func TestLinearizable(t *testing.T) {
	linearizability.CheckStore(t, open, linearizability.WithConventions(conventions), linearizability.WithOps(2_000))
}

// Undeclared, the library is flagged: its expired locks vanish and its one
// error answers where the contract expects the other.
func TestUndeclaredIsFlagged(t *testing.T) {
	cfg := linearizability.DefaultConfig()
	cfg.Ops, cfg.Keys = 2_000, 100
	h, err := linearizability.Record(t.Context(), open, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if r := linearizability.Check(h, time.Minute); r.Verdict != linearizability.Violation {
		t.Fatalf("undeclared: %s, want a violation", r)
	}
}

// Version 1 committed under a lock that had run out: held to its declared
// refusal of late commits, it is caught.
func TestVersion1IsCaught(t *testing.T) {
	for seed := uint64(1); seed <= 5; seed++ {
		cfg := linearizability.DefaultConfig()
		cfg.Ops, cfg.Keys, cfg.Seed, cfg.Conventions = 2_000, 100, seed, conventions
		h, err := linearizability.Record(t.Context(), func(c clock.Source) store.Store { return lockdedupe.NewV1(synctime.NowFunc(c)) }, cfg)
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
