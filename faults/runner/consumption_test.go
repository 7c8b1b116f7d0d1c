package runner

import (
	"encoding/json"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/idemcheck/idemcheck/faults/gen"
	"github.com/idemcheck/idemcheck/faults/scenario"
	"github.com/idemcheck/idemcheck/impl/contract/broker"
	"github.com/idemcheck/idemcheck/impl/contract/event"
	"github.com/idemcheck/idemcheck/impl/system"
	"github.com/idemcheck/idemcheck/internal/hunt"
)

// TestSameScenarioSameTrace: a scenario is the whole input of a run, so two
// runs of it give byte-identical traces and results.
func TestSameScenarioSameTrace(t *testing.T) {
	hunt.Check(t, func(t *rapid.T) {
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

// A run on buffers another run released gives what a run on new ones
// gives, byte for byte: nothing of the released run shows through, whichever
// kinds the two runs are.
func TestReleasedBuffersLeaveNoTrace(t *testing.T) {
	hunt.Check(t, func(t *rapid.T) {
		kinds := []scenario.Kind{scenario.KindConsumption, scenario.KindProjection}
		first := gen.ForKind(rapid.SampledFrom(kinds).Draw(t, "firstKind")).Draw(t, "first")
		s := gen.ForKind(rapid.SampledFrom(kinds).Draw(t, "kind")).Draw(t, "scenario")
		fresh, err := Run(s, system.Reference())
		if err != nil {
			t.Fatal(err)
		}
		want := resultJSON(fresh)
		wantTrace := fresh.Trace.String()
		for range 2 {
			out, err := Run(first, system.Reference())
			if err != nil {
				t.Fatal(err)
			}
			out.Release()
			if out.Trace.Len() != 0 || (out.Consumption != nil && out.Consumption.Actions != nil) {
				t.Fatalf("a released outcome still shows its actions or lines")
			}
		}
		again, err := Run(s, system.Reference())
		if err != nil {
			t.Fatal(err)
		}
		if resultJSON(again) != want || again.Trace.String() != wantTrace {
			t.Fatalf("a run on released buffers differs from a fresh one")
		}
	})
}

func resultJSON(o *Outcome) string {
	var b []byte
	if o.Consumption != nil {
		b, _ = json.Marshal(o.Consumption)
	} else {
		b, _ = json.Marshal(o.Projection)
	}
	return string(b)
}

func handWritten(steps ...scenario.Step) *scenario.Scenario {
	return &scenario.Scenario{Version: scenario.Version, Kind: scenario.KindConsumption, Consumption: &scenario.Consumption{
		Config: scenario.Config{Topic: "orders", Consumers: []string{"ledger"},
			Nodes:   []scenario.Node{{Name: "a"}},
			Workers: []scenario.Worker{{Name: "w1", Consumer: "ledger", Node: "a"}, {Name: "w2", Consumer: "ledger", Node: "a"}},
			Policy:  broker.Policy{MaxAttempts: 3, BackoffMs: 200, MaxBackoffMs: 800, AckTimeoutMs: 1000}, LeaseMs: 200, RetentionMs: 60_000},
		Events: []scenario.Event{{ID: "e1", OrderID: "o1", UserID: "u1", AmountCents: 500}},
		Steps:  steps,
	}}
}

// TestCrashAfterCommitBeforeAck: the redelivery is recognised as processed.
func TestCrashAfterCommitBeforeAck(t *testing.T) {
	s := handWritten(
		scenario.Step{Op: scenario.OpProduce},
		scenario.Step{Op: scenario.OpDeliver, Worker: "w1"},
		scenario.Step{Op: scenario.OpRun, Worker: "w1"}, // claim
		scenario.Step{Op: scenario.OpRun, Worker: "w1"}, // handle
		scenario.Step{Op: scenario.OpRun, Worker: "w1"}, // commit
		scenario.Step{Op: scenario.OpCrash, Worker: "w1"},
		scenario.Step{Op: scenario.OpAdvance, Ms: 1000},
		scenario.Step{Op: scenario.OpDeliver, Worker: "w2"},
		scenario.Step{Op: scenario.OpRun, Worker: "w2"},
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
// TestStaleCommitIsObserved: the runner records a stale commit as it
// happened and shows the stale worker's step to the observers, with the
// view before it, so that the fencing check can diff the store around it.
func TestStaleCommitIsObserved(t *testing.T) {
	s := handWritten(
		scenario.Step{Op: scenario.OpProduce},
		scenario.Step{Op: scenario.OpDeliver, Worker: "w1"},
		scenario.Step{Op: scenario.OpRun, Worker: "w1"},
		scenario.Step{Op: scenario.OpRun, Worker: "w1"},
		scenario.Step{Op: scenario.OpAdvance, Ms: 1000},
		scenario.Step{Op: scenario.OpDeliver, Worker: "w2"},
		scenario.Step{Op: scenario.OpRun, Worker: "w2"}, // takeover
		scenario.Step{Op: scenario.OpRun, Worker: "w1"}, // stale commit
	)
	obs := &recordingObserver{}
	out, err := Run(s, system.Reference(), obs)
	if err != nil {
		t.Fatal(err)
	}
	var commit *Action
	for i, a := range out.Consumption.Actions {
		if a.Worker == "w1" && a.Kind == ActCommit {
			commit = &out.Consumption.Actions[i]
			break
		}
	}
	if commit == nil || !commit.Stale || commit.Token != 1 || commit.Err == "" {
		t.Fatalf("w1's commit %+v: want a rejected commit with token 1", commit)
	}
	if got := obs.held[commit.Seq]; got != 1 {
		t.Fatalf("before w1's commit the observer saw it hold token %d, want 1", got)
	}
	if len(obs.after) != len(out.Consumption.Actions) {
		t.Fatalf("the observer saw %d actions of %d", len(obs.after), len(out.Consumption.Actions))
	}
	if line := out.Trace.Line(commit.Line); !strings.Contains(line, "w1 commits effect + processed mark with token 1 -> rejected") {
		t.Fatalf("trace line %d of the stale commit reads %q", commit.Line, line)
	}
}

// recordingObserver notes what it is shown: the token each worker held
// before a step (by the seq of the action that step records) and every
// action after it.
type recordingObserver struct {
	held  map[int]uint64
	after []ActionKind
}

func (o *recordingObserver) BeforeStep(v *View, worker string) {
	if o.held == nil {
		o.held = map[int]uint64{}
	}
	_, token := v.Held(worker)
	o.held[len(v.Actions())] = token
}

func (o *recordingObserver) After(_ *View, a *Action) { o.after = append(o.after, a.Kind) }

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

// The runner hands its consumers the events it encoded without parsing its
// own payloads again: that is right only if decoding an encoded event gives
// the event back, whatever its fields.
func TestPayloadRoundTrips(t *testing.T) {
	hunt.Check(t, func(t *rapid.T) {
		ev := event.OrderPaid{
			EventID: rapid.StringN(1, 12, -1).Draw(t, "id"), OccurredAtMs: rapid.Int64().Draw(t, "at"),
			Tenant: rapid.String().Draw(t, "tenant"), OrderID: rapid.String().Draw(t, "order"),
			UserID: rapid.String().Draw(t, "user"), AmountCents: rapid.Int64().Draw(t, "amount"),
		}
		got, err := event.DecodeOrderPaid(ev.Encode())
		if err != nil || got != ev {
			t.Fatalf("decode(encode(%+v)) = %+v, %v", ev, got, err)
		}
	})
}
