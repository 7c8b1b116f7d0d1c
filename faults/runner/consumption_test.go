package runner

import (
	"encoding/json"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/idemcheck/idemcheck/faults/gen"
	"github.com/idemcheck/idemcheck/faults/scenario"
	"github.com/idemcheck/idemcheck/impl/system"
)

// TestSameScenarioSameTrace: a scenario is the whole input of a run, so two
// runs of it give byte-identical traces and results.
func TestSameScenarioSameTrace(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s := gen.Consumption().Draw(t, "scenario")
		a, err := Run(s, system.Reference())
		if err != nil {
			t.Fatal(err)
		}
		b, err := Run(s, system.Reference())
		if err != nil {
			t.Fatal(err)
		}
		if a.Trace.String() != b.Trace.String() {
			t.Fatalf("traces differ:\n%s\n----\n%s", a.Trace.String(), b.Trace.String())
		}
		ja, _ := json.Marshal(a.Consumption)
		jb, _ := json.Marshal(b.Consumption)
		if string(ja) != string(jb) {
			t.Fatalf("results differ")
		}
	})
}

func handWritten(steps ...scenario.Step) *scenario.Scenario {
	return &scenario.Scenario{Version: scenario.Version, Kind: scenario.KindConsumption, Consumption: &scenario.Consumption{
		Config: scenario.Config{Topic: "orders", Consumers: []string{"ledger"},
			Nodes:       []scenario.Node{{Name: "a"}},
			Workers:     []scenario.Worker{{Name: "w1", Consumer: "ledger", Node: "a"}, {Name: "w2", Consumer: "ledger", Node: "a"}},
			MaxAttempts: 3, BackoffMs: 200, MaxBackoffMs: 800, AckTimeoutMs: 1000, LeaseMs: 200, RetentionMs: 60_000},
		Events: []scenario.Event{{ID: "e1", OrderID: "o1", UserID: "u1", AmountCents: 500}},
		Steps:  steps,
	}}
}

// TestCrashAfterCommitBeforeAck: the redelivery is recognised as processed.
func TestCrashAfterCommitBeforeAck(t *testing.T) {
	s := handWritten(
		scenario.Step{Op: scenario.OpProduce},
		scenario.Step{Op: scenario.OpDeliver, Worker: "w1"},
		scenario.Step{Op: scenario.OpStep, Worker: "w1"}, // claim
		scenario.Step{Op: scenario.OpStep, Worker: "w1"}, // handle
		scenario.Step{Op: scenario.OpStep, Worker: "w1"}, // commit
		scenario.Step{Op: scenario.OpCrash, Worker: "w1"},
		scenario.Step{Op: scenario.OpAdvance, Ms: 1000},
		scenario.Step{Op: scenario.OpDeliver, Worker: "w2"},
		scenario.Step{Op: scenario.OpStep, Worker: "w2"},
	)
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	out, err := Run(s, system.Reference())
	if err != nil {
		t.Fatal(err)
	}
	r := out.Consumption
	if len(r.Ledger) != 1 || !r.Quiesced {
		t.Fatalf("ledger %v quiesced %v", r.Ledger, r.Quiesced)
	}
	tr := out.Trace.String()
	for _, want := range []string{"w1 CRASHES holding e1", "attempt 2, last_error ack_timeout", "w2 claims /ledger/e1 -> processed"} {
		if !strings.Contains(tr, want) {
			t.Errorf("trace lacks %q:\n%s", want, tr)
		}
	}
}

// TestStaleCommitIsRecordedAsFenceCheck: the runner notices a commit made
// with a token older than the newest issued, and that it changed nothing.
func TestStaleCommitIsRecordedAsFenceCheck(t *testing.T) {
	s := handWritten(
		scenario.Step{Op: scenario.OpProduce},
		scenario.Step{Op: scenario.OpDeliver, Worker: "w1"},
		scenario.Step{Op: scenario.OpStep, Worker: "w1"},
		scenario.Step{Op: scenario.OpStep, Worker: "w1"},
		scenario.Step{Op: scenario.OpAdvance, Ms: 1000},
		scenario.Step{Op: scenario.OpDeliver, Worker: "w2"},
		scenario.Step{Op: scenario.OpStep, Worker: "w2"}, // takeover
		scenario.Step{Op: scenario.OpStep, Worker: "w1"}, // stale commit
	)
	out, err := Run(s, system.Reference())
	if err != nil {
		t.Fatal(err)
	}
	f := out.Consumption.Fences
	if len(f) != 1 || !f[0].Rejected || f[0].Diff != "" || f[0].Token != 1 || f[0].LatestToken != 2 {
		t.Fatalf("fence checks %+v", f)
	}
}

func TestRunRejectsMismatchedKinds(t *testing.T) {
	s := handWritten()
	if _, err := RunConsumption(&scenario.Scenario{Version: 1, Kind: scenario.KindProjection}, system.Reference()); err == nil {
		t.Fatal("a projection scenario ran as consumption")
	}
	if _, err := RunConsumption(s, system.Target{Name: "empty"}); err == nil {
		t.Fatal("a target without consumption parts ran")
	}
}

// TestSameSeedSameTrace: a seed draws the same scenario, which plays to the
// same trace, byte for byte.
func TestSameSeedSameTrace(t *testing.T) {
	for seed := range 25 {
		a, b := gen.Consumption().Example(seed), gen.Consumption().Example(seed)
		ja, _ := scenario.Marshal(a)
		jb, _ := scenario.Marshal(b)
		if string(ja) != string(jb) {
			t.Fatalf("seed %d drew two different scenarios", seed)
		}
		oa, err := Run(a, system.Reference())
		if err != nil {
			t.Fatal(err)
		}
		ob, err := Run(b, system.Reference())
		if err != nil {
			t.Fatal(err)
		}
		if oa.Trace.String() != ob.Trace.String() {
			t.Fatalf("seed %d: traces differ", seed)
		}
	}
}
