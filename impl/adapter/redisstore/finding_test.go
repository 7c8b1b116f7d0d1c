package redisstore_test

import (
	"context"
	"encoding/json"
	"slices"
	"testing"

	"github.com/idemcheck/idemcheck/faults/runner"
	"github.com/idemcheck/idemcheck/faults/scenario"
	"github.com/idemcheck/idemcheck/impl/adapter/redisstore"
	"github.com/idemcheck/idemcheck/impl/contract/broker"
	"github.com/idemcheck/idemcheck/impl/contract/clock"
	"github.com/idemcheck/idemcheck/impl/contract/store"
	"github.com/idemcheck/idemcheck/impl/system"
	"github.com/idemcheck/idemcheck/properties"
)

// target is the reference consumer over the Redis store: each run opens a
// fresh key prefix, which the runner's Close drops.
func target(t testing.TB) system.Target {
	a := addr(t)
	return system.WithStore("redis", func(c clock.Source) (store.Store, error) {
		return redisstore.Open(context.Background(), a, c)
	})
}

// crashBetweenEffectAndMark is the weakness by hand: a worker writes the
// effect, dies before the mark, and the redelivery's holder applies the
// effect again.
func crashBetweenEffectAndMark() *scenario.Scenario {
	step := scenario.Step{Op: scenario.OpRun, Worker: "w1"}
	return &scenario.Scenario{Version: scenario.Version, Kind: scenario.KindConsumption, Consumption: &scenario.Consumption{
		Config: scenario.Config{Topic: "orders", Consumers: []string{"ledger"},
			Nodes:   []scenario.Node{{Name: "n1"}},
			Workers: []scenario.Worker{{Name: "w1", Consumer: "ledger", Node: "n1"}},
			Policy:  broker.Policy{MaxAttempts: 3, BackoffMs: 200, MaxBackoffMs: 800, AckTimeoutMs: 1000}, LeaseMs: 200, RetentionMs: 60_000},
		Events: []scenario.Event{{ID: "evt-0001", OrderID: "ord-1", UserID: "usr-1", AmountCents: 100}},
		Steps: []scenario.Step{
			{Op: scenario.OpProduce},
			{Op: scenario.OpDeliver, Worker: "w1"},
			step,                                 // claim
			step,                                 // handle
			step,                                 // effect (HSETNX)
			{Op: scenario.OpCrash, Worker: "w1"}, // dies before the mark
		},
	}}
}

// failing returns the consumption properties a run violates, by name, and
// their verdicts for the log.
func failing(t *testing.T, s *scenario.Scenario, target system.Target) ([]string, string, *runner.Outcome) {
	t.Helper()
	out, verdicts, err := properties.Judge(s, target, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	var text string
	for _, v := range properties.Failed(verdicts) {
		names = append(names, v.Property)
		text += v.String()
	}
	return names, text, out
}

// TestCrashBetweenEffectAndMark: the harness flags the hand-written crash
// against Redis (atomicity: an effect without its mark; single-credit: the
// effect applied twice, stopped only by HSETNX), and passes the same
// scenario against the reference, whose commit is one step.
func TestCrashBetweenEffectAndMark(t *testing.T) {
	s := crashBetweenEffectAndMark()
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	if f, v, ref := failing(t, s, system.Reference()); len(f) != 0 {
		t.Fatalf("the reference fails %v on the hand-written scenario:\n%s%s", f, v, ref.Trace)
	}
	got, verdicts, out := failing(t, s, target(t))
	t.Logf("against redis:\n%s\n%s", verdicts, out.Trace)
	for _, want := range []string{"single-credit", "atomicity"} {
		if !slices.Contains(got, want) {
			t.Errorf("property %s not violated; violated: %v", want, got)
		}
	}
	if len(out.Consumption.Errors) != 0 {
		t.Errorf("unexpected store errors: %v", out.Consumption.Errors)
	}
	if want := 1; len(out.Consumption.Ledger) != want {
		t.Errorf("ledger %+v: the unique constraint should have kept one entry", out.Consumption.Ledger)
	}
}

// TestSameScenarioSameTrace: the Redis target is deterministic, even though
// Redis runs on the machine's clock — the store keeps time by the runner's.
func TestSameScenarioSameTrace(t *testing.T) {
	s := crashBetweenEffectAndMark()
	tg := target(t)
	a, err := runner.Run(s, tg)
	if err != nil {
		t.Fatal(err)
	}
	b, err := runner.Run(s, tg)
	if err != nil {
		t.Fatal(err)
	}
	ja, _ := json.Marshal(a.Consumption)
	jb, _ := json.Marshal(b.Consumption)
	if a.Trace.String() != b.Trace.String() || string(ja) != string(jb) {
		t.Fatalf("two runs of one scenario differ:\n%s\n----\n%s", a.Trace, b.Trace)
	}
}

// huntSeed fixes rapid's seed so the hunt draws the same scenarios each run.
const huntSeed = 20261121

// TestHuntFindsTheWeakness: rapid finds the weakness on its own and shrinks
// it to a small scenario. What it finds first is the window itself: between
// the effect write and the mark write the store holds a ledger entry whose
// record is not processed, which a crash would make permanent (see
// TestCrashBetweenEffectAndMark for the crash).
func TestHuntFindsTheWeakness(t *testing.T) {
	res := properties.Hunt(target(t), properties.HuntOptions{Kind: scenario.KindConsumption,
		Properties: properties.ForKind(scenario.KindConsumption), Checks: 300, Seed: huntSeed})
	if !res.Failed {
		t.Fatalf("the hunt did not find the weakness in %d checks", res.Checks)
	}
	size := res.Scenario.Size()
	t.Logf("found after %d checks in %v; shrunk scenario size %d\n%s", res.Checks, res.Elapsed, size,
		properties.Report(res.Verdict, res.Outcome, properties.ReportOptions{}))
	if res.Verdict.Property != "atomicity" {
		t.Errorf("caught by %s, want atomicity", res.Verdict.Property)
	}
	if size > 8 {
		t.Errorf("shrunk scenario has size %d, want at most 8", size)
	}
}
