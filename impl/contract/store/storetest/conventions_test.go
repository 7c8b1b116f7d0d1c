package storetest

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/impl/contract/clock"
	"github.com/idemcheck/idemcheck/impl/contract/store"
	"github.com/idemcheck/idemcheck/impl/mutant"
	"github.com/idemcheck/idemcheck/impl/reference/memstore"
)

// runStore runs c against the store newStore builds, held to conv, and
// returns what the check reported.
func runStore(c check, newStore func(clock.Source) store.Store, conv store.Conventions) (rec *recorder) {
	rec = &recorder{}
	clk := clock.NewVirtual(startMs)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	defer func() {
		if p := recover(); p != nil {
			if _, ok := p.(fatal); !ok {
				panic(p)
			}
		}
	}()
	c.run(&env{t: rec, s: newStore(clk), clock: clk, ctx: ctx, conv: conv})
	return rec
}

func conventional(t *testing.T, conv store.Conventions) func(clock.Source) store.Store {
	return func(c clock.Source) store.Store {
		s, err := memstore.NewWithConventions(c, conv)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
}

var conventions = []store.Conventions{
	mutant.InclusiveLease, mutant.DeleteOnFail, mutant.SilentRelease, mutant.MarkOnClaim,
	mutant.KeptMark, mutant.LibraryExpiry, mutant.VanishingLease, mutant.LateRefused, mutant.OneError,
	{LeaseEnd: store.LeaseEndInclusive, FailedAttempt: store.FailedAttemptDeleted, StaleRelease: store.StaleReleaseNoOp, ClaimMark: store.ClaimMarkOnClaim},
	{LeaseEnd: store.LeaseEndInclusive, FailedAttempt: store.FailedAttemptKeptMark, ClaimMark: store.ClaimMarkOnClaim,
		Expiry: store.ExpiryByLibrary, ExpiryMs: 120_000, ExpiredLease: store.ExpiredLeaseVanishes, Refusal: store.RefusalOneError},
	{FailedAttempt: store.FailedAttemptKeptMark, LateCommit: store.LateCommitRefused, Refusal: store.RefusalOneError, StaleRelease: store.StaleReleaseNoOp},
	{Expiry: store.ExpiryByLibrary, ExpiryMs: 30, ExpiryLatestMs: 45},
	{Expiry: store.ExpiryByLibrary, ExpiryMs: 30, ExpiryFrom: store.ExpiryFromClaim},
	{UnsettledExpiryMs: 30},
	{Lease: store.LeaseNone, UnsettledExpiryMs: 120_000},
	// A range and an expiry from the claim together, over minutes; an
	// unsettled record's own expiry longer than the lease, with leases
	// that hold at their end and kept marks; a mark with no lease that
	// shorter, kept after a failure and marked on claim.
	{Expiry: store.ExpiryByLibrary, ExpiryMs: 120_000, ExpiryLatestMs: 180_000, ExpiryFrom: store.ExpiryFromClaim},
	{UnsettledExpiryMs: 5_000, LeaseEnd: store.LeaseEndInclusive, FailedAttempt: store.FailedAttemptKeptMark, ExpiredLease: store.ExpiredLeaseVanishes},
	{Lease: store.LeaseNone, UnsettledExpiryMs: 300, FailedAttempt: store.FailedAttemptKeptMark, ClaimMark: store.ClaimMarkOnClaim,
		Expiry: store.ExpiryByLibrary, ExpiryMs: 60_000, ExpiryLatestMs: 90_000},
}

// A correct store of each convention passes every rule once it declares the
// convention — and fails some rule when it does not: the declaration, not a
// lenient suite, is what lets it pass.
func TestEachConventionPassesWhenDeclared(t *testing.T) {
	for _, conv := range conventions {
		newStore := conventional(t, conv)
		var undeclared []string
		for _, c := range checks {
			if rec := runStore(c, newStore, conv); rec.failed {
				t.Errorf("%+v: %s failed:\n%s", conv, c.name, strings.Join(rec.log, "\n"))
			}
			if rec := runStore(c, newStore, store.Conventions{}); rec.failed {
				undeclared = append(undeclared, c.name)
			}
		}
		if len(undeclared) == 0 {
			t.Errorf("%+v: undeclared, the store still passes every rule: the suite does not see the convention", conv)
		}
	}
}

// Each convention's mutant is caught under the convention it declares.
func TestConventionMutantsAreCaught(t *testing.T) {
	for _, m := range []struct {
		name     string
		conv     store.Conventions
		newStore func(clock.Source) store.Store
	}{
		{"lease-expires-before-declared-end", mutant.InclusiveLease, mutant.NewLeaseExpiresBeforeDeclaredEnd},
		{"fail-delete-restarts-tokens", mutant.DeleteOnFail, mutant.NewFailDeleteRestartsTokens},
		{"stale-release-frees-claim", mutant.SilentRelease, mutant.NewStaleReleaseFreesClaim},
		{"mark-on-claim-never-expires", mutant.MarkOnClaim, mutant.NewMarkOnClaimNeverExpires},
		{"kept-mark-never-expires", mutant.KeptMark, mutant.NewKeptMarkNeverExpires},
		{"library-expiry-too-early", mutant.LibraryExpiry, mutant.NewLibraryExpiryTooEarly},
		{"vanished-lease-restarts-tokens", mutant.VanishingLease, mutant.NewVanishedLeaseRestartsTokens},
		{"late-commit-lands", mutant.LateRefused, mutant.NewLateCommitLands},
		{"one-error-commits-settled-twice", mutant.OneError, mutant.NewOneErrorCommitsSettledTwice},
		{"sweep-every-window", mutant.ExpiryRange, mutant.NewSweepEveryWindow},
		{"expiry-counted-from-commit", mutant.ExpiryFromClaim, mutant.NewExpiryCountedFromCommit},
		{"unsettled-ttl-as-seconds", mutant.UnsettledExpiry, mutant.NewUnsettledTTLAsSeconds},
		{"lease-free-mark-never-expires", mutant.NoLease, mutant.NewLeaseFreeMarkNeverExpires},
	} {
		var caught []string
		for _, c := range checks {
			if runStore(c, m.newStore, m.conv).failed {
				caught = append(caught, c.name)
			}
		}
		if len(caught) == 0 {
			t.Errorf("%s passes every rule under %+v", m.name, m.conv)
		}
		t.Logf("%s caught by %v", m.name, caught)
	}
}
