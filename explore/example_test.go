package explore_test

import (
	"context"
	"fmt"

	"github.com/idemcheck/idemcheck/explore"
	"github.com/idemcheck/idemcheck/impl/system"
)

// Verify the reference for every schedule of up to 4 steps of one event and
// two workers (on the compact engine, the reference's own), then find the
// shortest schedule that breaks a mutant (on the runner engine, which plays
// the mutant's parts).
func ExampleExplore() {
	world := explore.World{Events: []string{"ok"}, Groups: 1, WorkersPerGroup: 2}
	r, err := explore.Explore(context.Background(), system.Reference(), explore.Options{World: world, Depth: 4})
	if err != nil {
		panic(err)
	}
	fmt.Printf("verified: every schedule up to depth %d, %d distinct states (engine %s)\n", r.Depth, r.States, r.Engine)

	mutant, _ := system.Lookup("takeover-without-fencing")
	r, err = explore.Explore(context.Background(), mutant, explore.Options{World: world, Depth: 8})
	if err != nil {
		panic(err)
	}
	cx := r.Counterexample
	fmt.Printf("%s: %s/%s broken by a schedule of %d steps (engine %s)\n", mutant.Name, cx.Verdict.Property, cx.Verdict.Law, cx.Depth, r.Engine)
	// Output:
	// verified: every schedule up to depth 4, 81 distinct states (engine compact)
	// takeover-without-fencing: single-credit/claim-store-dedupes broken by a schedule of 6 steps (engine runner)
}
