package compact

import (
	"fmt"
	"reflect"
	"slices"
	"testing"

	"cmp"
	gocmp "github.com/google/go-cmp/cmp"
	"pgregory.net/rapid"

	"github.com/idemcheck/idemcheck/faults/runner"
	"github.com/idemcheck/idemcheck/faults/scenario"
	"github.com/idemcheck/idemcheck/impl/contract/broker"
	"github.com/idemcheck/idemcheck/impl/contract/store"
	"github.com/idemcheck/idemcheck/impl/system"
	"github.com/idemcheck/idemcheck/internal/hunt"
	"github.com/idemcheck/idemcheck/properties/coverage"
)

// world draws a small consumption world: 1-3 events of any fate, 1-2
// groups of 1-2 workers, 1-2 nodes, and a retry policy, lease and
// retention short enough for schedules to reach them.
func world(t *rapid.T) *scenario.Consumption {
	c := &scenario.Consumption{Config: scenario.Config{
		Topic: "orders",
		Policy: broker.Policy{
			MaxAttempts:  rapid.IntRange(1, 3).Draw(t, "maxAttempts"),
			BackoffMs:    rapid.SampledFrom([]int64{50, 100}).Draw(t, "backoff"),
			AckTimeoutMs: rapid.SampledFrom([]int64{300, 1000}).Draw(t, "ackTimeout"),
		},
		LeaseMs:     rapid.SampledFrom([]int64{200, 1000, 1500}).Draw(t, "lease"),
		RetentionMs: rapid.SampledFrom([]int64{100, 2000}).Draw(t, "retention"),
	}}
	c.Config.MaxBackoffMs = 4 * c.Config.BackoffMs
	nodes := rapid.IntRange(1, 2).Draw(t, "nodes")
	for n := range nodes {
		c.Config.Nodes = append(c.Config.Nodes, scenario.Node{Name: fmt.Sprintf("n%d", n+1)})
	}
	groups := rapid.IntRange(1, 2).Draw(t, "groups")
	k := 0
	for g := range groups {
		name := fmt.Sprintf("g%d", g+1)
		c.Config.Consumers = append(c.Config.Consumers, name)
		for range rapid.IntRange(1, 2).Draw(t, "workers") {
			c.Config.Workers = append(c.Config.Workers, scenario.Worker{Name: fmt.Sprintf("w%d", k+1), Consumer: name, Node: c.Config.Nodes[k%nodes].Name})
			k++
		}
	}
	for i := range rapid.IntRange(1, 3).Draw(t, "events") {
		ev := scenario.Event{ID: fmt.Sprintf("e%d", i+1), OrderID: "o1", UserID: "u1", AmountCents: 100,
			Fate: rapid.SampledFrom([]scenario.Fate{scenario.FateOK, scenario.FatePoison, scenario.FateTransient}).Draw(t, "fate")}
		if ev.Fate == scenario.FateTransient {
			ev.Transient = rapid.IntRange(1, 2).Draw(t, "transient")
		}
		c.Events = append(c.Events, ev)
	}
	return c
}

// stepOf draws a schedule step of c's world, weighted towards the
// pipeline.
func stepOf(t *rapid.T, c *scenario.Consumption) scenario.Step {
	worker := func() string { return rapid.SampledFrom(c.Config.Workers).Draw(t, "worker").Name }
	node := func() string { return rapid.SampledFrom(c.Config.Nodes).Draw(t, "node").Name }
	event := func() int { return rapid.IntRange(0, len(c.Events)-1).Draw(t, "event") }
	switch rapid.IntRange(0, 15).Draw(t, "op") {
	case 0, 1:
		return scenario.Step{Op: scenario.OpProduce, Event: event()}
	case 2:
		return scenario.Step{Op: scenario.OpProduceFail, Event: event()}
	case 3:
		return scenario.Step{Op: scenario.OpDuplicate, Event: event(), N: rapid.IntRange(1, 3).Draw(t, "n")}
	case 4, 5:
		return scenario.Step{Op: scenario.OpDeliver, Worker: worker(), Pick: rapid.IntRange(0, 2).Draw(t, "pick")}
	case 6, 7, 8, 9:
		return scenario.Step{Op: scenario.OpRun, Worker: worker()}
	case 10:
		return scenario.Step{Op: scenario.OpCrash, Worker: worker()}
	case 11, 12:
		return scenario.Step{Op: scenario.OpAdvance, Ms: rapid.SampledFrom([]int64{50, 200, 1000, 2500}).Draw(t, "ms")}
	case 13:
		op := rapid.SampledFrom([]scenario.Op{scenario.OpSkew, scenario.OpClockStep}).Draw(t, "clock")
		return scenario.Step{Op: op, Node: node(), Ms: rapid.SampledFrom([]int64{-5000, 300}).Draw(t, "ms")}
	case 14:
		return scenario.Step{Op: scenario.OpCleanup, Worker: worker()}
	}
	return scenario.Step{Op: scenario.OpReplay}
}

// view is what both a runner's world and a compact state show of the
// system, in the runner's words: the store's records and ledger, the
// broker's messages and DLQ, and what each worker holds.
type view struct {
	Records  []store.Record
	Ledger   []string
	Messages []string
	DLQ      []string
	Workers  []string
}

var reasons = map[uint8]string{reasonNone: "", reasonAckTimout: "ack_timeout", reasonLocked: "locked",
	reasonTransient: "transient: downstream timeout", reasonPoison: "poison: amount rejected"}

var recStates = map[uint8]store.State{recProcessing: store.Processing, recProcessed: store.Processed, recFailed: store.Failed}

var statuses = map[uint8]broker.Status{stPending: broker.Pending, stInflight: broker.Inflight, stAcked: broker.Acked, stDead: broker.Dead}

var origins = map[uint8]broker.Origin{originProduced: broker.Produced, originDuplicated: broker.Duplicated, originReplayed: broker.Replayed}

func runnerView(w *runner.World, sc *scenario.Consumption) view {
	v := w.View()
	var out view
	out.Records = append(out.Records, v.Records()...)
	for _, e := range v.Ledger() {
		out.Ledger = append(out.Ledger, e.Consumer+"/"+e.EventID)
	}
	for _, g := range sc.Config.Consumers {
		for _, m := range v.Messages() {
			if m.Message.Group == g {
				out.Messages = append(out.Messages, fmt.Sprintf("%s/%d %s %s %s attempts=%d last=%q", g, m.Message.Offset, m.Message.Key, m.Message.Origin, m.Status, m.Message.Attempts, m.Message.LastError))
			}
		}
	}
	for _, d := range v.DLQ() {
		out.DLQ = append(out.DLQ, fmt.Sprintf("%s/%d %s attempts=%d last=%q poison=%t", d.Group, d.Offset, d.Key, d.Attempts, d.LastError, d.Poison))
	}
	for _, wc := range sc.Config.Workers {
		k, busy := v.Busy(wc.Name)
		_, tok := v.Held(wc.Name)
		out.Workers = append(out.Workers, fmt.Sprintf("%s busy=%t %s token=%d", wc.Name, busy, k.ID, tok))
	}
	return out
}

func compactView(s *State, cfg *Config) view {
	sc := cfg.Sc
	var out view
	for g, name := range sc.Config.Consumers {
		for ev, e := range sc.Events {
			r := s.recs[g][ev]
			if r.state != recNone {
				out.Records = append(out.Records, store.Record{Key: store.Key{Tenant: e.Tenant, Consumer: name, ID: e.ID}, State: recStates[r.state],
					Attempts: int(r.attempts), Token: uint64(r.token), StartedAtMs: r.started, FinishedAtMs: r.finished, LeaseUntilMs: r.lease, LastError: reasons[r.lastErr]})
			}
			if s.ledger[g][ev] > 0 {
				out.Ledger = append(out.Ledger, name+"/"+e.ID)
			}
		}
	}
	slices.SortFunc(out.Records, func(a, b store.Record) int {
		return cmp.Compare(a.Key.Consumer+"\x00"+a.Key.ID, b.Key.Consumer+"\x00"+b.Key.ID)
	})
	slices.Sort(out.Ledger)
	for g, name := range sc.Config.Consumers {
		for off, m := range s.msgs {
			e := s.ent(cfg, int32(off), g)
			out.Messages = append(out.Messages, fmt.Sprintf("%s/%d %s %s %s attempts=%d last=%q", name, off, sc.Events[m.event].ID, origins[m.origin], statuses[e.status], e.attempts, reasons[e.lastErr]))
		}
	}
	for _, d := range s.dlq {
		out.DLQ = append(out.DLQ, fmt.Sprintf("%s/%d %s attempts=%d last=%q poison=%t", sc.Config.Consumers[d.group], d.offset, sc.Events[s.msgs[d.offset].event].ID, d.attempts, reasons[d.lastErr], d.poison))
	}
	for wi, wc := range sc.Config.Workers {
		w := s.workers[wi]
		id := ""
		if w.stage != stageIdle {
			id = sc.Events[w.event].ID
		}
		out.Workers = append(out.Workers, fmt.Sprintf("%s busy=%t %s token=%d", wc.Name, w.stage != stageIdle, id, w.token))
	}
	return out
}

// TestStateMatchesTheReference plays drawn schedules on the
// compact model, the executable specification of the reference world,
// and on the reference through the runner, and holds the runner to the
// model: the whole system after every step, after the drain and after the
// replay. Each step is taken by the model first; a runner that then
// differs from it is the failure (-model +runner).
func TestStateMatchesTheReference(t *testing.T) {
	hunt.Check(t, func(t *rapid.T) {
		sc := world(t)
		cfg, err := NewConfig(sc)
		if err != nil {
			t.Fatal(err)
		}
		trk := coverage.NewTracker()
		w, err := runner.NewWorld(sc, system.Reference().Consumption, trk)
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		s := New(cfg)
		j := NewJudge(nil, true)
		n := rapid.IntRange(1, 25).Draw(t, "steps")
		for i := range n {
			st := stepOf(t, sc)
			cs, err := Compile(cfg, st)
			if err != nil {
				t.Fatal(err)
			}
			s.Apply(cfg, j, cs)
			var u State
			u.Unpack(cfg, s.Pack(cfg, nil))
			if !sameState(&u, s) {
				t.Fatalf("after step %d the model's state does not survive Pack and Unpack:\n%+v\n%+v", i, *s, u)
			}
			if err := w.Apply(i, st); err != nil {
				t.Fatal(err)
			}
			if d := gocmp.Diff(compactView(s, cfg), runnerView(w, sc)); d != "" {
				t.Fatalf("after step %d (%+v) the reference departs from the compact model (-model +runner):\n%s", i, st, d)
			}
		}
		if l := j.Broken(); l != LawNone {
			t.Fatalf("the model broke %s", l)
		}
		s.Finish(cfg, j)
		if l := j.Broken(); l != LawNone {
			t.Fatalf("the model broke %s at the end", l)
		}
		w.Finish()
		if d := gocmp.Diff(compactView(s, cfg), runnerView(w, sc)); d != "" {
			t.Fatalf("after the drain, replay and probe the reference departs from the compact model (-model +runner):\n%s", d)
		}
		if !w.Result().Quiesced {
			t.Fatalf("the reference did not quiesce")
		}
		if got, want := trk.Reached(), s.Coverage(); got != want {
			t.Fatalf("coverage: the runner's tracker reached %v, the model %v", got.Names(), want.Names())
		}
	})
}

// sameState compares two states field by field, an empty slice equal to
// none.
func sameState(a, b *State) bool {
	x, y := *a, *b
	x.msgs, x.ents, x.dlq, y.msgs, y.ents, y.dlq = nil, nil, nil, nil, nil, nil
	return reflect.DeepEqual(x, y) && slices.Equal(a.msgs, b.msgs) && slices.Equal(a.ents, b.ents) && slices.Equal(a.dlq, b.dlq)
}
