package properties_test

import (
	"testing"

	"github.com/idemcheck/idemcheck/faults/scenario"
	"github.com/idemcheck/idemcheck/impl/system"
	"github.com/idemcheck/idemcheck/properties"
)

// TestOnlyHealthyAppliedCatchesAFailedClaimLeftLocked: the store that
// never re-acquires a failed record keeps every event credited or
// dead-lettered and no record in processing. With nothing-lost's
// healthy-applied switched off, every other consumption law passes it on
// the scenarios the mutant table draws; with it on, it is caught.
func TestOnlyHealthyAppliedCatchesAFailedClaimLeftLocked(t *testing.T) {
	m, ok := system.Lookup("failed-claim-stays-locked")
	if !ok {
		t.Fatal("the mutant failed-claim-stays-locked is not registered")
	}
	props := properties.ForKind(scenario.KindConsumption)
	law := properties.ID("nothing-lost", properties.LawHealthyApplied)
	off := properties.Hunt(m, properties.HuntOptions{Kind: scenario.KindConsumption, Properties: props, Checks: mutantChecks, Seed: mutantSeed,
		Off: map[string]string{law: "the law under test"}, NoReduce: true})
	if off.Failed {
		t.Fatalf("another law catches the mutant: %s\n%s", off.Law, off.Message)
	}
	on := properties.Hunt(m, properties.HuntOptions{Kind: scenario.KindConsumption, Properties: props, Checks: mutantChecks, Seed: mutantSeed, NoReduce: true})
	if !on.Failed || on.Law != law {
		t.Fatalf("want %s broken, got %q: %s", law, on.Law, on.Message)
	}
}
