package properties_test

import (
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
	for _, conv := range []store.Conventions{mutant.InclusiveLease, mutant.DeleteOnFail, mutant.SilentRelease, mutant.MarkOnClaim, all} {
		t.Run(string(conv.LeaseEnd)+string(conv.FailedAttempt)+string(conv.StaleRelease)+string(conv.ClaimMark), func(t *testing.T) {
			target := system.WithStore("memstore", func(c clock.Source) (store.Store, error) { return memstore.NewWithConventions(c, conv) })
			properties.Conformance(t, target, properties.Options{Conventions: &conv, Checks: 100})
		})
	}
}
