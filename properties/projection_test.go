package properties_test

import (
	"fmt"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/idemcheck/idemcheck/explore"
	"github.com/idemcheck/idemcheck/faults/gen"
	"github.com/idemcheck/idemcheck/faults/runner"
	"github.com/idemcheck/idemcheck/faults/scenario"
	"github.com/idemcheck/idemcheck/impl/system"
	"github.com/idemcheck/idemcheck/internal/hunt"
	"github.com/idemcheck/idemcheck/properties"
)

var projPropertyNames = []string{"skew-safe-final-state", "hlc-laws", "replica-convergence"}

func projProperties(t *testing.T) []properties.Property {
	t.Helper()
	var out []properties.Property
	for _, name := range projPropertyNames {
		p, ok := properties.ByName(name)
		if !ok || p.Kind != scenario.KindProjection {
			t.Fatalf("property %q is not registered for projection scenarios", name)
		}
		out = append(out, p)
	}
	return out
}

// projJudge plays s against the named target and judges it by the named
// property.
func projJudge(t *testing.T, s *scenario.Scenario, target, property string) (properties.Verdict, *runner.Outcome) {
	t.Helper()
	tg, ok := system.Lookup(target)
	if !ok {
		t.Fatalf("no target %q", target)
	}
	p, ok := properties.ByName(property)
	if !ok {
		t.Fatalf("no property %q", property)
	}
	out, verdicts, err := properties.Judge(s, tg, []properties.Property{p})
	if err != nil {
		t.Fatalf("%s: %v", target, err)
	}
	return verdicts[0], out
}

// The reference passes every projection property on every drawn scenario: a
// false alarm is as bad as a miss.
func TestProjectionReferencePasses(t *testing.T) {
	props := projProperties(t)
	hunt.Check(t, func(rt *rapid.T) {
		s := gen.Projection().Draw(rt, "scenario")
		out, verdicts, err := properties.Judge(s, system.Reference(), props)
		if err != nil {
			rt.Fatalf("runner: %v", err)
		}
		for _, v := range verdicts {
			if !v.Pass {
				rt.Log(properties.Report(v, out, properties.ReportOptions{Scenario: true}))
				rt.Fatalf("%s: %s", v.Property, v.Summary)
			}
		}
	})
}

// Every projection mutant is caught by the property it names, within one
// rapid run, and the counterexample shrinks to a handful of steps that still
// fail when replayed, and that the reference passes.
func TestProjectionMutantsAreKilledAndShrunk(t *testing.T) {
	for _, name := range []string{"hlc-no-merge", "hlc-backwards-on-step", "timestamp-lww-projector", "dedup-only-projector"} {
		t.Run(name, func(t *testing.T) {
			m, ok := system.Lookup(name)
			if !ok || !m.Mutant || m.Projection == nil {
				t.Fatalf("%s is not a registered projection mutant", name)
			}
			p, ok := properties.ByName(m.KilledBy)
			if !ok {
				t.Fatalf("%s names an unknown property %q", name, m.KilledBy)
			}
			res := properties.Hunt(m, properties.HuntOptions{Kind: scenario.KindProjection, Properties: []properties.Property{p}, Checks: 100, Seed: 1})
			if !res.Failed || res.Scenario == nil {
				t.Fatalf("%s survived %d checks of %s", name, res.Checks, p.Name)
			}
			t.Logf("killed after %d check(s):\n%s", res.Checks, properties.Report(res.Verdict, res.Outcome, properties.ReportOptions{}))
			if res.Verdict.Property != p.Name || res.Verdict.Diff == "" || len(res.Verdict.Details) == 0 {
				t.Errorf("verdict %+v: want %s with details and a diff", res.Verdict, p.Name)
			}
			if size := res.Scenario.Size(); size > 10 {
				t.Errorf("shrunk counterexample has size %d; want at most 10", size)
			}
			if v, _ := projJudge(t, res.Scenario, name, p.Name); v.Pass || v.Summary != res.Verdict.Summary {
				t.Errorf("replaying the counterexample gives %q; want the same failure %q", v.Summary, res.Verdict.Summary)
			}
			if v, _ := projJudge(t, res.Scenario, "reference", p.Name); !v.Pass {
				t.Errorf("the reference fails the counterexample too: %s", v)
			}
		})
	}
}

// projSkewDemo: A runs five minutes ahead and B three minutes behind. A
// creates the order; B receives it and, a second later in true time, cancels
// it. replicas are the delivery orders.
func projSkewDemo(replicas ...[]string) *scenario.Scenario {
	p := &scenario.Projection{
		Nodes: []scenario.Node{{Name: "A", SkewMs: 5 * 60_000}, {Name: "B", SkewMs: -3 * 60_000}},
		Steps: []scenario.ProjectionStep{
			{Op: scenario.OpEmit, Node: "A", ID: "e1", Order: "o1", Kind: scenario.EventOrderCreated},
			{Op: scenario.OpAdvance, Ms: 500},
			{Op: scenario.OpReceive, Node: "B", Event: "e1"},
			{Op: scenario.OpAdvance, Ms: 500},
			{Op: scenario.OpEmit, Node: "B", ID: "e2", Order: "o1", Kind: scenario.EventOrderCancelled},
		},
	}
	for i, d := range replicas {
		p.Replicas = append(p.Replicas, scenario.Replica{Name: fmt.Sprintf("r%d", i+1), Deliveries: d})
	}
	return &scenario.Scenario{Version: scenario.Version, Kind: scenario.KindProjection, Projection: p}
}

func projFinal(t *testing.T, out *runner.Outcome, replica, projector string) string {
	t.Helper()
	for _, rep := range out.Projection.Replicas {
		if rep.Name != replica {
			continue
		}
		for _, run := range rep.Projectors {
			if run.Name == projector {
				return run.Statuses()["o1"]
			}
		}
	}
	t.Fatalf("no %s run on replica %s", projector, replica)
	return ""
}

// SPEC: the timestamp projector's bug is reproduced deterministically from
// clock skew alone; the sequence and HLC projectors are shown correct under
// the same skew, in any delivery order, with duplicates.
func TestTimestampBugFromSkewAloneAndTheFixesHold(t *testing.T) {
	t.Run("in order, no duplicates", func(t *testing.T) {
		s := projSkewDemo([]string{"e1", "e2"})
		v, out := projJudge(t, s, "reference", "skew-safe-final-state")
		if !v.Pass {
			t.Fatalf("reference: %s", v)
		}
		// B's clock is eight minutes behind A's, so its really later
		// cancellation carries an older occurredAt and is dropped.
		ev := out.Projection.Events
		if ev[1].Event.OccurredAtMs >= ev[0].Event.OccurredAtMs || ev[1].TrueMs <= ev[0].TrueMs {
			t.Fatalf("the demo lost its skew: e1 at %d (true %d), e2 at %d (true %d)", ev[0].Event.OccurredAtMs, ev[0].TrueMs, ev[1].Event.OccurredAtMs, ev[1].TrueMs)
		}
		for projector, want := range map[string]string{"timestamp-lww": "created", "seq": "cancelled", "hlc": "cancelled"} {
			if got := projFinal(t, out, "r1", projector); got != want {
				t.Errorf("%s ended o1 %s; want %s", projector, got, want)
			}
		}
		if !strings.Contains(strings.Join(v.Details, "\n"), "baseline timestamp-lww on replica r1 ends wrong") {
			t.Errorf("the verdict does not show the baseline failing: %s", v)
		}
		if bad, _ := projJudge(t, s, "timestamp-lww-projector", "skew-safe-final-state"); bad.Pass {
			t.Errorf("the timestamp projector claimed correct passed: %s", bad)
		}
	})

	t.Run("every delivery order with duplicates", func(t *testing.T) {
		// Exploration enumerates the orders: each event 1 to 3 times.
		replicas := explore.DeliveryOrders([]string{"e1", "e2"}, 3)
		if len(replicas) != 62 {
			t.Fatalf("%d delivery orders; want 62", len(replicas))
		}
		s := projSkewDemo(replicas...)
		for _, prop := range projPropertyNames {
			if v, _ := projJudge(t, s, "reference", prop); !v.Pass {
				t.Errorf("reference: %s", v)
			}
		}
		_, out := projJudge(t, s, "reference", "skew-safe-final-state")
		for _, rep := range out.Projection.Replicas {
			for projector, want := range map[string]string{"timestamp-lww": "created", "seq": "cancelled", "hlc": "cancelled"} {
				if got := projFinal(t, out, rep.Name, projector); got != want {
					t.Errorf("replica %s (%v): %s ended o1 %s; want %s", rep.Name, rep, projector, got, want)
				}
			}
		}
	})
}

// Each check fails, deterministically, on a small hand-built scenario of the
// bug it exists for, with a stable summary, details and a diff.
func TestProjectionChecksFailOnTheirBugs(t *testing.T) {
	stepBack := &scenario.Scenario{Version: scenario.Version, Kind: scenario.KindProjection, Projection: &scenario.Projection{
		Nodes: []scenario.Node{{Name: "A"}},
		Steps: []scenario.ProjectionStep{
			{Op: scenario.OpEmit, Node: "A", ID: "e1", Order: "o1", Kind: scenario.EventOrderCreated},
			{Op: scenario.OpClockStep, Node: "A", Ms: -60_000},
			{Op: scenario.OpEmit, Node: "A", ID: "e2", Order: "o1", Kind: scenario.EventOrderPaid},
		},
		Replicas: []scenario.Replica{{Name: "r1", Deliveries: []string{"e1", "e2"}}},
	}}
	cases := []struct {
		target, property string
		s                *scenario.Scenario
		summary          string
	}{
		{"hlc-no-merge", "hlc-laws", projSkewDemo([]string{"e1", "e2"}), "hlc law merge-dominates broken"},
		{"hlc-no-merge", "skew-safe-final-state", projSkewDemo([]string{"e1", "e2"}), "projector hlc ended an order off its causally correct state"},
		{"hlc-backwards-on-step", "hlc-laws", stepBack, "hlc law monotonic broken"},
		{"timestamp-lww-projector", "skew-safe-final-state", projSkewDemo([]string{"e2", "e1", "e1"}), "projector timestamp-lww ended an order off its causally correct state"},
		{"dedup-only-projector", "replica-convergence", projSkewDemo([]string{"e1", "e2"}, []string{"e2", "e1", "e2"}), "replicas of projector dedup-only diverged"},
	}
	for _, c := range cases {
		v, _ := projJudge(t, c.s, c.target, c.property)
		if v.Pass || v.Summary != c.summary || len(v.Details) == 0 || v.Diff == "" {
			t.Errorf("%s judged by %s: got %s; want a failure %q with details and a diff", c.target, c.property, v, c.summary)
		}
		if ref, _ := projJudge(t, c.s, "reference", c.property); !ref.Pass {
			t.Errorf("reference judged by %s: %s", c.property, ref)
		}
	}
	if v, _ := projJudge(t, stepBack, "hlc-backwards-on-step", "hlc-laws"); !strings.Contains(strings.Join(v.Details, "\n"), "wall clock was moved back 60000 ms") {
		t.Errorf("the verdict does not point at the clock step: %s", v)
	}
}

// A target that claims no projector cannot pass invariants 7 and 9 by
// having nothing to judge.
func TestProjectionChecksRefuseAnEmptyClaim(t *testing.T) {
	tg := system.Reference()
	parts := *tg.Projection
	parts.Projectors = nil
	tg.Projection = &parts
	for _, name := range []string{"skew-safe-final-state", "replica-convergence"} {
		p, _ := properties.ByName(name)
		_, verdicts, err := properties.Judge(projSkewDemo([]string{"e1", "e2"}, []string{"e2", "e1"}), tg, []properties.Property{p})
		if err != nil {
			t.Fatal(err)
		}
		if v := verdicts[0]; v.Pass {
			t.Errorf("%s passed a target with no projector: %s", name, v)
		}
	}
}
