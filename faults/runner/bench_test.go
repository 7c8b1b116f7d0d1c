package runner_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/faults/runner"
	"github.com/idemcheck/idemcheck/faults/scenario"
	"github.com/idemcheck/idemcheck/impl/contract/broker"
	"github.com/idemcheck/idemcheck/impl/contract/clock"
	"github.com/idemcheck/idemcheck/impl/contract/event"
	"github.com/idemcheck/idemcheck/impl/contract/store"
	"github.com/idemcheck/idemcheck/impl/reference/consumer"
	"github.com/idemcheck/idemcheck/impl/reference/producer"
	"github.com/idemcheck/idemcheck/impl/system"
)

// The throughput benchmark: how many actions per second the runner plays
// (BenchmarkRunnerSteps), against the same broker, store and consumer
// operations called directly, without the runner's trace, action records,
// store snapshots, atomicity checks and fencing diffs (BenchmarkDirectOps).
// The ratio of their ns/step is the runner's overhead:
//
//	go test -run='^$' -bench='RunnerSteps|DirectOps' -benchtime=2s ./faults/runner

// benchScenario is a fixed, busy consumption scenario: two consumer groups,
// four workers on two nodes (one skewed), a transient and a poison event,
// duplicates, a crash holding a claim, lease expiry and takeover, skew and a
// clock step, a cleanup and a replay. After it the runner drains, replays the
// whole stream and drains again.
func benchScenario() *scenario.Scenario {
	w := func(op scenario.Op, worker string) scenario.Step { return scenario.Step{Op: op, Worker: worker} }
	steps := []scenario.Step{
		{Op: scenario.OpProduce, Event: 0}, {Op: scenario.OpProduce, Event: 1}, {Op: scenario.OpProduce, Event: 2},
		{Op: scenario.OpDuplicate, Event: 0, N: 2},
		w(scenario.OpDeliver, "w1"), w(scenario.OpDeliver, "w2"), w(scenario.OpRun, "w1"), w(scenario.OpRun, "w2"),
		w(scenario.OpCrash, "w2"), {Op: scenario.OpAdvance, Ms: 200},
		w(scenario.OpDeliver, "w2"), w(scenario.OpRun, "w2"), w(scenario.OpRun, "w1"), w(scenario.OpRun, "w1"),
		{Op: scenario.OpProduce, Event: 3}, {Op: scenario.OpDuplicate, Event: 3, N: 1},
		w(scenario.OpDeliver, "w3"), w(scenario.OpRun, "w3"), w(scenario.OpDeliver, "w4"), w(scenario.OpRun, "w4"),
		{Op: scenario.OpSkew, Node: "n2", Ms: -300_000}, {Op: scenario.OpClockStep, Node: "n1", Ms: -60_000},
		{Op: scenario.OpProduce, Event: 0}, {Op: scenario.OpProduceFail, Event: 3},
		w(scenario.OpRun, "w3"), w(scenario.OpRun, "w3"), w(scenario.OpRun, "w4"), w(scenario.OpCleanup, "w1"),
		{Op: scenario.OpAdvance, Ms: 1000}, {Op: scenario.OpReplay},
		w(scenario.OpDeliver, "w1"), w(scenario.OpRun, "w1"), w(scenario.OpRun, "w1"), w(scenario.OpRun, "w1"),
	}
	return &scenario.Scenario{Version: scenario.Version, Kind: scenario.KindConsumption, Consumption: &scenario.Consumption{
		Config: scenario.Config{
			Topic: "orders", Consumers: []string{"ledger", "audit"},
			Nodes: []scenario.Node{{Name: "n1"}, {Name: "n2", SkewMs: 300_000}},
			Workers: []scenario.Worker{
				{Name: "w1", Consumer: "ledger", Node: "n1"}, {Name: "w2", Consumer: "ledger", Node: "n2"},
				{Name: "w3", Consumer: "audit", Node: "n1"}, {Name: "w4", Consumer: "audit", Node: "n2"},
			},
			Policy: broker.Policy{MaxAttempts: 4, BackoffMs: 200, MaxBackoffMs: 800, AckTimeoutMs: 1000}, LeaseMs: 200, RetentionMs: 60_000,
		},
		Events: []scenario.Event{
			{ID: "evt-0001", OrderID: "ord-1", UserID: "usr-1", AmountCents: 100},
			{ID: "evt-0002", Tenant: "acme", OrderID: "ord-2", UserID: "usr-2", AmountCents: 200, Fate: scenario.FateTransient, Transient: 2},
			{ID: "evt-0003", OrderID: "ord-3", UserID: "usr-1", AmountCents: 300, Fate: scenario.FatePoison},
			{ID: "evt-0004", Tenant: "acme", OrderID: "ord-4", UserID: "usr-2", AmountCents: 400},
		},
		Steps: steps,
	}}
}

func BenchmarkRunnerSteps(b *testing.B) {
	s, target := benchScenario(), system.Reference()
	steps := 0
	start := time.Now()
	for b.Loop() {
		out, err := runner.RunConsumption(s, target)
		if err != nil {
			b.Fatal(err)
		}
		steps += len(out.Consumption.Actions)
	}
	report(b, steps, time.Since(start))
}

func BenchmarkDirectOps(b *testing.B) {
	s, target := benchScenario(), system.Reference()
	steps := 0
	start := time.Now()
	for b.Loop() {
		d := newDirect(s.Consumption, target.Consumption)
		d.run()
		steps += d.ops
	}
	report(b, steps, time.Since(start))
}

func report(b *testing.B, steps int, elapsed time.Duration) {
	b.ReportMetric(float64(steps)/elapsed.Seconds(), "steps/s")
	b.ReportMetric(float64(elapsed.Nanoseconds())/float64(steps), "ns/step")
	b.ReportMetric(float64(steps)/float64(b.N), "steps/op")
}

// TestDirectOpsMatchRunner: the direct driver performs the same operations
// as the runner — as many, ending in the same ledger, records and DLQ — so
// the two benchmarks compare like with like.
func TestDirectOpsMatchRunner(t *testing.T) {
	s, target := benchScenario(), system.Reference()
	out, err := runner.RunConsumption(s, target)
	if err != nil {
		t.Fatal(err)
	}
	d := newDirect(s.Consumption, target.Consumption)
	d.run()
	r := out.Consumption
	if d.ops != len(r.Actions) {
		t.Fatalf("direct driver did %d operations, the runner recorded %d actions", d.ops, len(r.Actions))
	}
	if !slices.Equal(d.ledger, r.Ledger) || !slices.Equal(d.dlq, r.DLQ) || len(d.records) != len(r.Records) {
		t.Fatalf("final states differ:\nledger %v\nvs     %v\ndlq %v\nvs  %v", d.ledger, r.Ledger, d.dlq, r.DLQ)
	}
	if !r.Quiesced || len(r.Ledger) == 0 || len(r.DLQ) == 0 {
		t.Fatalf("the benchmark scenario should quiesce, credit and dead-letter: quiesced=%t ledger=%d dlq=%d", r.Quiesced, len(r.Ledger), len(r.DLQ))
	}
}

// direct plays a consumption scenario the way the runner does, calling the
// same operations in the same order, and keeps nothing but a count.
type direct struct {
	ctx     context.Context
	sc      *scenario.Consumption
	truth   *clock.Virtual
	nodes   map[string]*clock.Node
	st      store.Store
	br      broker.Broker
	prod    *producer.Producer
	workers []*consumer.Worker
	byName  map[string]*consumer.Worker
	runs    map[string]int
	ops     int

	ledger  []store.Entry
	records []store.Record
	dlq     []broker.DLQEntry
}

func newDirect(sc *scenario.Consumption, parts *system.Consumption) *direct {
	cfg := sc.Config
	truth := clock.NewVirtual(runner.StartMs)
	st, err := parts.NewStore(truth)
	if err != nil {
		panic(err)
	}
	br := parts.NewBroker(truth, cfg.Policy, cfg.Consumers)
	d := &direct{ctx: context.Background(), sc: sc, truth: truth, nodes: map[string]*clock.Node{}, st: st, br: br,
		prod: &producer.Producer{Gate: parts.NewGate(), Broker: br}, byName: map[string]*consumer.Worker{}, runs: map[string]int{}}
	for _, n := range cfg.Nodes {
		d.nodes[n.Name] = clock.NewNode(n.Name, truth, n.SkewMs)
	}
	for _, wc := range cfg.Workers {
		deps := consumer.Deps{Store: st, Broker: br, Producer: d.prod, Node: d.nodes[wc.Node], Handler: d.handler}
		wk := consumer.NewWorker(consumer.Config{Name: wc.Name, Consumer: wc.Consumer, LeaseMs: cfg.LeaseMs}, deps, parts.Pipeline())
		d.workers = append(d.workers, wk)
		d.byName[wc.Name] = wk
	}
	return d
}

// handler is the runner's application code: credit, failing as the fate says.
func (d *direct) handler(tx store.Tx, consumerName string, ev event.OrderPaid) consumer.Result {
	res := consumer.Credit(tx, consumerName, ev)
	for _, e := range d.sc.Events {
		if e.ID != ev.EventID {
			continue
		}
		k := consumerName + "/" + ev.EventID
		d.runs[k]++
		switch {
		case e.Fate == scenario.FatePoison:
			return consumer.Result{Kind: consumer.Poison, Reason: "poison: amount rejected"}
		case e.Fate == scenario.FateTransient && d.runs[k] <= e.Transient:
			return consumer.Result{Kind: consumer.Transient, Reason: "transient: downstream timeout"}
		}
	}
	return res
}

func (d *direct) run() {
	for _, st := range d.sc.Steps {
		d.apply(st)
	}
	if d.drain() {
		d.br.Replay(d.sc.Config.Topic)
		d.ops++
		d.drain()
	}
	d.ledger, _ = d.st.Ledger(d.ctx)
	d.records, _ = d.st.Records(d.ctx)
	d.dlq = d.br.DLQ()
	if c, ok := d.st.(store.Closer); ok {
		_ = c.Close()
	}
}

func (d *direct) apply(st scenario.Step) {
	cfg := d.sc.Config
	switch st.Op {
	case scenario.OpProduce:
		ev := d.sc.Events[st.Event]
		payload := event.OrderPaid{EventID: ev.ID, OccurredAtMs: d.truth.NowMs(), Tenant: ev.Tenant, OrderID: ev.OrderID,
			UserID: ev.UserID, AmountCents: ev.AmountCents}.Encode()
		_, _ = d.prod.Produce(cfg.Topic, ev.Tenant, ev.ID, payload)
		d.ops++
	case scenario.OpProduceFail:
		ev := d.sc.Events[st.Event]
		_, _ = d.prod.ProduceFailing(cfg.Topic, ev.Tenant, ev.ID)
		d.ops++
	case scenario.OpDuplicate:
		ev := d.sc.Events[st.Event]
		for _, m := range d.br.Messages() {
			if m.Message.Key == ev.ID && m.Message.Tenant == ev.Tenant && m.Message.Origin == broker.Produced {
				if _, err := d.br.Duplicate(m.Message.Topic, m.Message.Offset, st.N); err == nil {
					d.ops++
				}
				break
			}
		}
	case scenario.OpDeliver:
		d.deliver(d.byName[st.Worker], st.Pick)
	case scenario.OpRun:
		d.step(d.byName[st.Worker])
	case scenario.OpCrash:
		d.byName[st.Worker].Crash(d.ctx)
		d.ops++
	case scenario.OpAdvance:
		d.advance(st.Ms)
	case scenario.OpSkew:
		d.nodes[st.Node].SetSkew(st.Ms)
		d.ops++
	case scenario.OpClockStep:
		d.nodes[st.Node].Step(st.Ms)
		d.ops++
	case scenario.OpCleanup:
		_, _ = d.byName[st.Worker].Cleanup(d.ctx, cfg.RetentionMs)
		d.ops++
	case scenario.OpReplay:
		d.br.Replay(cfg.Topic)
		d.ops++
	}
}

func (d *direct) deliver(wk *consumer.Worker, pick int) bool {
	if !wk.Idle() {
		return false
	}
	m, ok := d.br.Deliver(wk.Consumer(), pick)
	if !ok || wk.Receive(m) != nil {
		return false
	}
	d.ops++
	return true
}

func (d *direct) step(wk *consumer.Worker) {
	if wk.Idle() {
		return
	}
	_, _ = wk.Step(d.ctx)
	d.ops++
}

func (d *direct) advance(ms int64) {
	d.truth.Advance(ms)
	d.br.Tick()
	d.ops++
}

// drain is the runner's drain without its bookkeeping.
func (d *direct) drain() bool {
	for n := 0; n < runner.DrainLimit; {
		progressed := false
		for _, wk := range d.workers {
			for !wk.Idle() && n < runner.DrainLimit {
				d.step(wk)
				n++
				progressed = true
			}
		}
		for _, wk := range d.workers {
			if d.deliver(wk, 0) {
				n++
				progressed = true
			}
		}
		if progressed {
			continue
		}
		quiet, next := d.br.Quiet()
		if quiet {
			return true
		}
		if wait := next - d.truth.NowMs(); wait > 0 {
			d.advance(wait)
		} else {
			d.br.Tick()
		}
		n++
	}
	return false
}
