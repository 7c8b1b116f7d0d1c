package claimttl_test

import (
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/examples/libraries/claimttl"
	"github.com/idemcheck/idemcheck/impl/adapter/synctime"
	"github.com/idemcheck/idemcheck/impl/contract/clock"
	"github.com/idemcheck/idemcheck/impl/contract/store"
	"github.com/idemcheck/idemcheck/impl/contract/store/storetest"
	"github.com/idemcheck/idemcheck/impl/system"
	"github.com/idemcheck/idemcheck/linearizability"
	"github.com/idemcheck/idemcheck/properties"
)

// ttl is how long a key is kept after its claim, as a team would
// configure it: longer than any redelivery of the broker.
const ttl = 2 * time.Minute

// declared says so to every check: the table expires completed keys
// itself, ttl after the claim of the attempt that completed them.
func declared(d time.Duration) store.Conventions {
	return store.Conventions{Expiry: store.ExpiryByLibrary, ExpiryMs: d.Milliseconds(), ExpiryFrom: store.ExpiryFromClaim}
}

func open(c clock.Source) store.Store { return claimttl.New(synctime.NowFunc(c), ttl) }

func TestContract(t *testing.T) {
	storetest.Run(t, func(t *testing.T, c clock.Source) store.Store { return open(c) }, declared(ttl))
}

func TestInvariants(t *testing.T) {
	conv := declared(ttl)
	properties.Conformance(t, system.WithStore("claimttl", func(c clock.Source) (store.Store, error) { return open(c), nil }),
		properties.Options{Conventions: &conv, Checks: 100})
}

// A TTL shorter than the attempts the scenarios play: a key may be
// forgotten as soon as its commit lands, which the invariants accept of a
// TTL declared from the claim.
func TestInvariantsShortTTL(t *testing.T) {
	const short = 300 * time.Millisecond
	conv := declared(short)
	properties.Conformance(t, system.WithStore("claimttl-300ms", func(c clock.Source) (store.Store, error) { return claimttl.New(synctime.NowFunc(c), short), nil }),
		properties.Options{Conventions: &conv, Checks: 300})
}

// A recording moves time by seconds: a TTL of 30 ms expires keys within
// it, and the model knows from which claim each counts.
func TestLinearizable(t *testing.T) {
	const short = 30 * time.Millisecond
	linearizability.CheckStore(t, func(c clock.Source) store.Store { return claimttl.New(synctime.NowFunc(c), short) },
		linearizability.WithConventions(declared(short)), linearizability.WithOps(2_000))
}

// caught records the table built by newTable over a TTL of 30 ms, held to
// conv, and reports whether some seed of five shows a violation.
func caught(t *testing.T, newTable func(func() time.Time, time.Duration) *claimttl.Table, conv store.Conventions) bool {
	t.Helper()
	for seed := uint64(1); seed <= 5; seed++ {
		cfg := linearizability.DefaultConfig()
		cfg.Ops, cfg.Keys, cfg.Seed, cfg.Conventions = 2_000, 100, seed, conv
		h, err := linearizability.Record(t.Context(), func(c clock.Source) store.Store { return newTable(synctime.NowFunc(c), 30*time.Millisecond) }, cfg)
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

// Declared to count its expiry from the commit, the same table is
// flagged: its keys go as long before as their attempts took.
func TestExpiryFromTheCommitIsFlagged(t *testing.T) {
	fromCommit := declared(30 * time.Millisecond)
	fromCommit.ExpiryFrom = store.ExpiryFromFinished
	if !caught(t, claimttl.New, fromCommit) {
		t.Fatal("a table whose TTL counts from the claim passed as one whose TTL counts from the commit")
	}
}

// Version 1 kept a key's first expiry through its retries and takeovers:
// held to its declared TTL from the claim of the completing attempt, it
// is caught.
func TestVersion1IsCaught(t *testing.T) {
	if !caught(t, claimttl.NewV1, declared(30*time.Millisecond)) {
		t.Fatal("version 1 survived five recordings")
	}
}
