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

// concurrencyOnly are the mutants only the linearizability check (and the
// contract suite) kills: their bugs need real goroutines, not schedules of
// steps, or break a promise the consumption laws do not read — a declared
// refusal of late commits, one error for every refusal, tokens restarting
// once an expired lease vanished, which the small worlds do not reach; a
// result kept longer than its declared expiry, which no law forbids.
var concurrencyOnly = map[string]bool{
	"claim-without-row-lock": true, "commit-lost-in-write-back": true, "fail-resets-token": true,
	"takeover-keeps-token": true, "lease-expires-before-declared-end": true,
	"late-commit-lands": true, "one-error-commits-settled-twice": true, "vanished-lease-restarts-tokens": true,
	"sweep-every-window": true, "expiry-counted-from-commit": true,
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
	var histories []*scenario.Projection
	for _, h := range ProjectionHistories() {
		histories = append(histories, h.History)
	}
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

// The catalogue's names are distinct and each history is valid.
func TestProjectionHistoriesAreNamedAndValid(t *testing.T) {
	seen := map[string]bool{}
	for _, h := range ProjectionHistories() {
		if h.Name == "" || h.Doc == "" || seen[h.Name] {
			t.Errorf("history %q: empty or repeated name, or no doc", h.Name)
		}
		seen[h.Name] = true
		if got, ok := ProjectionHistory(h.Name); !ok || got.Name != h.Name {
			t.Errorf("ProjectionHistory(%q) does not find it", h.Name)
		}
		if _, err := ExploreProjection(system.Reference(), h.History, 1, nil); err != nil {
			t.Errorf("%s: %v", h.Name, err)
		}
	}
	if _, ok := ProjectionHistory("nope"); ok {
		t.Error("ProjectionHistory finds a history that is not in the catalogue")
	}
}
