package properties_test

import (
	"fmt"
	"testing"

	"github.com/idemcheck/idemcheck/impl/contract/clock"
	"github.com/idemcheck/idemcheck/impl/contract/store"
	"github.com/idemcheck/idemcheck/impl/mutant"
	"github.com/idemcheck/idemcheck/impl/reference/memstore"
	"github.com/idemcheck/idemcheck/impl/system"
	"github.com/idemcheck/idemcheck/properties"
)

// A correct store of every convention, declared through Options, is never
// flagged by any invariant.
func TestConventionStoresConform(t *testing.T) {
	all := store.Conventions{LeaseEnd: store.LeaseEndInclusive, FailedAttempt: store.FailedAttemptDeleted, StaleRelease: store.StaleReleaseNoOp, ClaimMark: store.ClaimMarkOnClaim}
	more := store.Conventions{FailedAttempt: store.FailedAttemptKeptMark, ClaimMark: store.ClaimMarkOnClaim, Expiry: store.ExpiryByLibrary, ExpiryMs: 120_000,
		ExpiredLease: store.ExpiredLeaseVanishes, LateCommit: store.LateCommitRefused, Refusal: store.RefusalOneError}
	// Expiries by the library over the redelivery window and under it (a
	// range, from the claim); unsettled records' own expiry under a lease
	// and over one; marks with no lease, short and long.
	expiries := []store.Conventions{
		{Expiry: store.ExpiryByLibrary, ExpiryMs: 120_000, ExpiryLatestMs: 180_000},
		{Expiry: store.ExpiryByLibrary, ExpiryMs: 120_000, ExpiryFrom: store.ExpiryFromClaim},
		{Expiry: store.ExpiryByLibrary, ExpiryMs: 300, ExpiryLatestMs: 450, ExpiryFrom: store.ExpiryFromClaim},
		{UnsettledExpiryMs: 150},
		{UnsettledExpiryMs: 120_000, FailedAttempt: store.FailedAttemptKeptMark},
		{Lease: store.LeaseNone, UnsettledExpiryMs: 120_000},
		{Lease: store.LeaseNone, UnsettledExpiryMs: 300, FailedAttempt: store.FailedAttemptKeptMark, ClaimMark: store.ClaimMarkOnClaim},
		{Lease: store.LeaseNone, UnsettledExpiryMs: 2_000, FailedAttempt: store.FailedAttemptDeleted, Expiry: store.ExpiryByLibrary, ExpiryMs: 120_000, ExpiryLatestMs: 180_000},
	}
	for _, conv := range append([]store.Conventions{mutant.InclusiveLease, mutant.DeleteOnFail, mutant.SilentRelease, mutant.MarkOnClaim,
		mutant.KeptMark, mutant.LibraryExpiry, mutant.VanishingLease, mutant.LateRefused, mutant.OneError, all, more}, expiries...) {
		name := fmt.Sprintf("%s%s%s%s%s%s%s%s%s%s", conv.LeaseEnd, conv.FailedAttempt, conv.StaleRelease, conv.ClaimMark, conv.Expiry, conv.ExpiryFrom,
			conv.ExpiredLease, conv.LateCommit, conv.Refusal, conv.Lease)
		if conv.ExpiryLatestMs > 0 || conv.UnsettledExpiryMs > 0 || conv.ExpiryMs > 0 {
			name += fmt.Sprintf("-%d-%d-%d", conv.ExpiryMs, conv.ExpiryLatestMs, conv.UnsettledExpiryMs)
		}
		t.Run(name, func(t *testing.T) {
			target := system.WithStore("memstore", func(c clock.Source) (store.Store, error) { return memstore.NewWithConventions(c, conv) })
			properties.Conformance(t, target, properties.Options{Conventions: &conv, Checks: 100})
		})
	}
}
