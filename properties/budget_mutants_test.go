package properties

import (
	"testing"

	"github.com/idemcheck/idemcheck/faults/scenario"
	"github.com/idemcheck/idemcheck/impl/system"
)

// TestInvariantsCatchFencingStoreMutants: the two store mutants that random
// schedules used to miss (a stale release freeing the new holder's claim,
// caught once in 8,584 scenarios; tokens restarting after a cleanup, never
// caught in 40,000) are caught by the fencing invariant within a small
// fraction of the default budget, now that the generator plays takeovers
// whose slow worker releases or commits, and re-claims after a cleanup.
func TestInvariantsCatchFencingStoreMutants(t *testing.T) {
	fencing, _ := ByName("fencing")
	for _, name := range []string{"stale-release-frees-claim", "fail-delete-restarts-tokens"} {
		m, ok := system.Lookup(name)
		if !ok {
			t.Fatalf("no mutant %q", name)
		}
		for seed := uint64(1); seed <= 3; seed++ {
			res := Hunt(m, HuntOptions{Kind: scenario.KindConsumption, Properties: []Property{fencing}, Checks: 1000, Seed: seed, NoReduce: true})
			if !res.Failed || res.Law != ID("fencing", LawStaleChangesNothing) {
				t.Errorf("%s, seed %d: not caught by fencing within 1000 checks (failed=%t, law %q)", name, seed, res.Failed, res.Law)
			}
		}
	}
}
