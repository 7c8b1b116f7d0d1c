package explore

import (
	"context"
	"testing"

	"github.com/idemcheck/idemcheck/faults/scenario"
	"github.com/idemcheck/idemcheck/impl/system"
	"github.com/idemcheck/idemcheck/properties"
)

// mutantWorlds are the worlds each mutant is explored in, in turn: one
// event whose first handler run fails, one that succeeds, and one whose
// every delivery fails (transient 2 times under max_attempts 2).
var mutantWorlds = [][]string{{"transient:1"}, {"ok"}, {"transient:2"}}

// concurrencyOnly are the mutants only the linearizability check kills:
// their bugs need real goroutines, not schedules of steps.
var concurrencyOnly = map[string]bool{
	"claim-without-row-lock": true, "commit-lost-in-write-back": true, "fail-resets-token": true,
	"takeover-keeps-token": true, "lease-expires-before-declared-end": true,
}

// mutantDepth bounds the exploration of each mutant.
const mutantDepth = 8

// findMutant explores m in each of mutantWorlds, one depth more at a time,
// and returns the first counterexample: a shortest one over the worlds.
func findMutant(tb testing.TB, m system.Target, maxDepth int) *Counterexample {
	for d := 1; d <= maxDepth; d++ {
		for _, evs := range mutantWorlds {
			r, err := Explore(context.Background(), m, Options{World: World{Events: evs, Groups: 1, WorkersPerGroup: 2}, Depth: d})
			if err != nil {
				tb.Fatal(err)
			}
			if r.Counterexample != nil {
				return r.Counterexample
			}
		}
	}
	return nil
}

// Exploration finds every consumption mutant (but the concurrency mutants,
// which are the linearizability check's) at a small depth, and the counterexample fails again when replayed as an
// ordinary scenario, and the reference passes it.
func TestExplorationFindsEveryConsumptionMutant(t *testing.T) {
	for _, m := range system.Mutants() {
		if m.Consumption == nil || concurrencyOnly[m.Name] {
			continue
		}
		t.Run(m.Name, func(t *testing.T) {
			cx := findMutant(t, m, mutantDepth)
			if cx == nil {
				t.Fatalf("%s survived every schedule up to depth %d", m.Name, mutantDepth)
			}
			t.Logf("found at depth %d: %s/%s", cx.Depth, cx.Verdict.Property, cx.Verdict.Law)
			if cx.Verdict.Pass || cx.Outcome == nil {
				t.Fatalf("the counterexample did not fail when judged again: %s", cx.Verdict)
			}
			_, vs, err := properties.Judge(cx.Scenario, system.Reference(), nil)
			if err != nil {
				t.Fatal(err)
			}
			if f := properties.Failed(vs); len(f) > 0 {
				t.Fatalf("the reference fails the counterexample: %s", f[0])
			}
		})
	}
}

// Exploring every delivery order with duplicates finds every projection
// mutant, and the reference passes every order.
func TestExplorationFindsEveryProjectionMutant(t *testing.T) {
	skew := &scenario.Projection{
		Nodes: []scenario.Node{{Name: "A", SkewMs: 5 * 60_000}, {Name: "B", SkewMs: -3 * 60_000}},
		Steps: []scenario.ProjectionStep{
			{Op: scenario.OpEmit, Node: "A", ID: "e1", Order: "o1", Kind: scenario.EventOrderCreated},
			{Op: scenario.OpAdvance, Ms: 500},
			{Op: scenario.OpReceive, Node: "B", Event: "e1"},
			{Op: scenario.OpAdvance, Ms: 500},
			{Op: scenario.OpEmit, Node: "B", ID: "e2", Order: "o1", Kind: scenario.EventOrderCancelled},
		},
	}
	stepBack := &scenario.Projection{
		Nodes: []scenario.Node{{Name: "A"}},
		Steps: []scenario.ProjectionStep{
			{Op: scenario.OpEmit, Node: "A", ID: "e1", Order: "o1", Kind: scenario.EventOrderCreated},
			{Op: scenario.OpClockStep, Node: "A", Ms: -60_000},
			{Op: scenario.OpEmit, Node: "A", ID: "e2", Order: "o1", Kind: scenario.EventOrderPaid},
		},
	}
	// A is 100 ms ahead and B receives at once; then B receives after a
	// 2 s delay in the queue; then A stamps a burst of local events.
	ahead := &scenario.Projection{
		Nodes: []scenario.Node{{Name: "A", SkewMs: 100}, {Name: "B"}},
		Steps: []scenario.ProjectionStep{
			{Op: scenario.OpEmit, Node: "A", ID: "e1", Order: "o1", Kind: scenario.EventOrderCreated},
			{Op: scenario.OpReceive, Node: "B", Event: "e1"},
			{Op: scenario.OpEmit, Node: "B", ID: "e2", Order: "o1", Kind: scenario.EventOrderCancelled},
		},
	}
	delayed := &scenario.Projection{
		Nodes: []scenario.Node{{Name: "A"}, {Name: "B"}},
		Steps: []scenario.ProjectionStep{
			{Op: scenario.OpEmit, Node: "A", ID: "e1", Order: "o1", Kind: scenario.EventOrderCreated},
			{Op: scenario.OpAdvance, Ms: 2000},
			{Op: scenario.OpReceive, Node: "B", Event: "e1"},
			{Op: scenario.OpEmit, Node: "B", ID: "e2", Order: "o1", Kind: scenario.EventOrderCancelled},
		},
	}
	burst := &scenario.Projection{
		Nodes: []scenario.Node{{Name: "A"}},
		Steps: []scenario.ProjectionStep{
			{Op: scenario.OpEmit, Node: "A", ID: "e1", Order: "o1", Kind: scenario.EventOrderCreated},
			{Op: scenario.OpBurst, Node: "A", Count: 70_000},
			{Op: scenario.OpEmit, Node: "A", ID: "e2", Order: "o1", Kind: scenario.EventOrderPaid},
		},
	}
	histories := []*scenario.Projection{skew, stepBack, ahead, delayed, burst}
	for _, h := range histories {
		r, err := ExploreProjection(system.Reference(), h, 3, nil)
		if err != nil {
			t.Fatal(err)
		}
		if r.Orders != 62 || r.Counterexample != nil {
			t.Fatalf("reference: %d orders, counterexample %v: %s", r.Orders, r.Counterexample != nil, r.Verdict)
		}
	}
	found := 0
	for _, m := range system.Mutants() {
		if m.Projection == nil {
			continue
		}
		var r *ProjectionResult
		for _, h := range histories {
			var err error
			if r, err = ExploreProjection(m, h, 3, nil); err != nil {
				t.Fatal(err)
			}
			if r.Counterexample != nil {
				break
			}
		}
		switch {
		case r.Counterexample != nil:
			found++
			t.Logf("%s: %s, order %v", m.Name, r.Verdict.Summary, r.Counterexample.Projection.Replicas[len(r.Counterexample.Projection.Replicas)-1].Deliveries)
		default:
			t.Errorf("%s survived every delivery order of every history", m.Name)
		}
	}
	if found == 0 {
		t.Error("no projection mutant registered")
	}
}
