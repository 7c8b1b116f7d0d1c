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
	for _, conv := range []store.Conventions{mutant.InclusiveLease, mutant.DeleteOnFail, mutant.SilentRelease, mutant.MarkOnClaim,
		mutant.KeptMark, mutant.LibraryExpiry, mutant.VanishingLease, mutant.LateRefused, mutant.OneError, all, more} {
		name := fmt.Sprintf("%s%s%s%s%s%s%s%s", conv.LeaseEnd, conv.FailedAttempt, conv.StaleRelease, conv.ClaimMark, conv.Expiry, conv.ExpiredLease, conv.LateCommit, conv.Refusal)
		t.Run(name, func(t *testing.T) {
			target := system.WithStore("memstore", func(c clock.Source) (store.Store, error) { return memstore.NewWithConventions(c, conv) })
			properties.Conformance(t, target, properties.Options{Conventions: &conv, Checks: 100})
		})
	}
}
