package conformance_test

import (
	"strings"
	"testing"

	"github.com/idemcheck/idemcheck/faults/scenario"
	"github.com/idemcheck/idemcheck/impl/contract/broker"
	"github.com/idemcheck/idemcheck/properties"
)

// twoWorkersOneCrash: two workers hold open units of work on two events;
// w1 crashes. Against a SQL store only w1's connection dies; against a
// process adapter the whole store process dies, and w2's unit with it.
// Either way every invariant must hold.
func twoWorkersOneCrash() *scenario.Scenario {
	step := func(w string) scenario.Step { return scenario.Step{Op: scenario.OpRun, Worker: w} }
	return &scenario.Scenario{Version: scenario.Version, Kind: scenario.KindConsumption, Consumption: &scenario.Consumption{
		Config: scenario.Config{Topic: "orders", Consumers: []string{"ledger"},
			Nodes:   []scenario.Node{{Name: "n1"}},
			Workers: []scenario.Worker{{Name: "w1", Consumer: "ledger", Node: "n1"}, {Name: "w2", Consumer: "ledger", Node: "n1"}},
			Policy:  broker.Policy{MaxAttempts: 3, BackoffMs: 200, MaxBackoffMs: 800, AckTimeoutMs: 1000}, LeaseMs: 200, RetentionMs: 60_000},
		Events: []scenario.Event{
			{ID: "evt-0001", OrderID: "ord-1", UserID: "usr-1", AmountCents: 100},
			{ID: "evt-0002", OrderID: "ord-2", UserID: "usr-2", AmountCents: 200},
		},
		Steps: []scenario.Step{
			{Op: scenario.OpProduce, Event: 0},
			{Op: scenario.OpProduce, Event: 1},
			{Op: scenario.OpDeliver, Worker: "w1"},
			{Op: scenario.OpDeliver, Worker: "w2"},
			step("w1"), step("w2"), // both claim
			step("w1"), step("w2"), // both open a unit of work and stage the credit
			{Op: scenario.OpCrash, Worker: "w1"},
			step("w2"), // w2 commits
		},
	}}
}

// TestCrashWithOpenUnits plays twoWorkersOneCrash against every real store
// that is configured and checks every consumption property.
func TestCrashWithOpenUnits(t *testing.T) {
	s := twoWorkersOneCrash()
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		spec string
		// lost: w2's commit fails because the crash took its unit too.
		lost bool
		need func(testing.TB) string
	}{
		{spec: "sqlite"},
		{spec: "postgres", need: postgresDSN},
		{spec: "exec", lost: true, need: nodeCommand},
	} {
		t.Run(c.spec, func(t *testing.T) {
			spec := c.spec
			if c.need != nil {
				if v := c.need(t); spec == "exec" {
					spec = "exec:" + v
				}
			}
			out, verdicts, err := properties.Judge(s, openTarget(t, spec), nil)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("trace:\n%s", out.Trace)
			for _, v := range properties.Failed(verdicts) {
				t.Errorf("%s", v)
			}
			lost := false
			for _, e := range out.Consumption.Errors {
				lost = lost || strings.Contains(e, "w2 commit") && strings.Contains(e, "lost")
			}
			if lost != c.lost {
				t.Errorf("w2's commit lost its unit of work: %v, want %v (errors: %v)", lost, c.lost, out.Consumption.Errors)
			}
		})
	}
}
