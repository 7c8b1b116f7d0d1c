package consumer

import (
	"context"
	"testing"

	"github.com/idemcheck/idemcheck/impl/contract/broker"
	"github.com/idemcheck/idemcheck/impl/contract/clock"
	"github.com/idemcheck/idemcheck/impl/contract/event"
	"github.com/idemcheck/idemcheck/impl/contract/store"
	"github.com/idemcheck/idemcheck/impl/reference/membroker"
	"github.com/idemcheck/idemcheck/impl/reference/memstore"
	"github.com/idemcheck/idemcheck/impl/reference/producer"
)

type rig struct {
	truth *clock.Virtual
	st    *memstore.Store
	br    *membroker.Broker
	prod  *producer.Producer
}

func newRig() *rig {
	truth := clock.NewVirtual(1000)
	br := membroker.New(truth, broker.Policy{MaxAttempts: 3, BackoffMs: 100, MaxBackoffMs: 400, AckTimeoutMs: 100}, []string{"ledger"})
	return &rig{truth: truth, st: memstore.New(truth), br: br, prod: &producer.Producer{Gate: producer.NewGate(), Broker: br}}
}

func (r *rig) worker(name string, h Handler, p Pipeline) *Worker {
	deps := Deps{Store: r.st, Broker: r.br, Producer: r.prod, Node: clock.NewNode("n", r.truth, 0), Handler: h}
	return NewWorker(Config{Name: name, Consumer: "ledger", LeaseMs: 100}, deps, p)
}

func (r *rig) produce(id string) {
	ev := event.OrderPaid{EventID: id, OrderID: "o", UserID: "u", AmountCents: 5}
	r.prod.Produce("orders", "", id, ev.Encode())
}

// run steps w until idle and returns the actions it took.
func run(t *testing.T, w *Worker) []Action {
	t.Helper()
	var acts []Action
	for i := 0; !w.Idle(); i++ {
		if i > 20 {
			t.Fatal("worker never went idle")
		}
		rep, _ := w.Step(context.Background())
		acts = append(acts, rep.Action)
	}
	return acts
}

func deliver(t *testing.T, r *rig, w *Worker) {
	t.Helper()
	d, ok := r.br.Deliver("ledger", 0)
	if !ok {
		t.Fatal("nothing to deliver")
	}
	if err := w.Receive(d); err != nil {
		t.Fatal(err)
	}
}

func equal(a, b []Action) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestPipelineStepsAndDedup(t *testing.T) {
	r := newRig()
	r.produce("e1")
	r.br.Duplicate("orders", 0, 1)
	w := r.worker("w1", nil, Reference())
	deliver(t, r, w)
	if got, want := run(t, w), []Action{ActClaim, ActHandle, ActCommit, ActAck}; !equal(got, want) {
		t.Fatalf("first delivery steps %v, want %v", got, want)
	}
	deliver(t, r, w)
	if got, want := run(t, w), []Action{ActClaim, ActAck}; !equal(got, want) {
		t.Fatalf("duplicate steps %v, want %v", got, want)
	}
	m := w.Metrics()
	if m.Processed != 1 || m.Dedup != 1 {
		t.Fatalf("metrics %+v, want processed 1 dedup 1", m)
	}
	if l, _ := r.st.Ledger(context.Background()); len(l) != 1 {
		t.Fatalf("ledger %v", l)
	}
}

func TestTransientReleasesClaimAndPoisonDeadLetters(t *testing.T) {
	r := newRig()
	r.produce("e1")
	r.produce("e2")
	failOnce := map[string]bool{}
	h := func(tx store.Tx, c string, ev event.OrderPaid) Result {
		tx.Credit(store.Entry{Consumer: c, EventID: ev.EventID})
		if ev.EventID == "e2" {
			return Result{Kind: Poison, Reason: "bad amount"}
		}
		if !failOnce[ev.EventID] {
			failOnce[ev.EventID] = true
			return Result{Kind: Transient, Reason: "timeout"}
		}
		return Result{Kind: OK}
	}
	w := r.worker("w1", h, Reference())
	deliver(t, r, w)
	if got, want := run(t, w), []Action{ActClaim, ActHandle, ActFail, ActNack}; !equal(got, want) {
		t.Fatalf("transient steps %v, want %v", got, want)
	}
	rec, _, _ := r.st.Get(context.Background(), store.Key{Consumer: "ledger", ID: "e1"})
	if rec.State != store.Failed || rec.LastError != "timeout" {
		t.Fatalf("record after transient failure: %+v", rec)
	}
	if l, _ := r.st.Ledger(context.Background()); len(l) != 0 {
		t.Fatalf("a failed handler's staged credit landed: %v", l)
	}
	deliver(t, r, w) // e2, poison
	if got, want := run(t, w), []Action{ActClaim, ActHandle, ActFail, ActDeadLetter, ActAck}; !equal(got, want) {
		t.Fatalf("poison steps %v, want %v", got, want)
	}
	if dlq := r.br.DLQ(); len(dlq) != 1 || dlq[0].Key != "e2" || dlq[0].LastError != "bad amount" {
		t.Fatalf("DLQ %+v", dlq)
	}
	m := w.Metrics()
	if m.Retries["timeout"] != 1 || m.DLQ["bad amount"] != 1 {
		t.Fatalf("metrics %+v", m)
	}
}

func TestSlowWorkerIsFencedAfterTakeover(t *testing.T) {
	r := newRig()
	r.produce("e1")
	slow, fast := r.worker("slow", nil, Reference()), r.worker("fast", nil, Reference())
	deliver(t, r, slow)
	slow.Step(context.Background()) // claim
	slow.Step(context.Background()) // handle
	r.truth.Advance(100)            // lease and ack timeout expire
	deliver(t, r, fast)
	run(t, fast)
	rep, err := slow.Step(context.Background()) // commit with the stale token
	if err != nil || !rep.Stale || rep.Action != ActCommit {
		t.Fatalf("stale commit: %+v, %v", rep, err)
	}
	if !slow.Idle() {
		t.Fatal("fenced worker still busy")
	}
	if l, _ := r.st.Ledger(context.Background()); len(l) != 1 {
		t.Fatalf("ledger %v, want one entry", l)
	}
}

func TestCrashLosesDeliveryAndUndecodablePayloadIsPoison(t *testing.T) {
	r := newRig()
	r.produce("e1")
	w := r.worker("w1", nil, Reference())
	deliver(t, r, w)
	w.Step(context.Background())
	w.Crash(context.Background())
	if !w.Idle() || w.Metrics().Crashes != 1 {
		t.Fatal("crash did not leave the worker idle")
	}
	r.br.Enqueue("orders", "", "junk", []byte("not json"), broker.Produced)
	r.truth.Advance(100)
	for {
		d, ok := r.br.Deliver("ledger", 0)
		if !ok {
			break
		}
		w.Receive(d)
		run(t, w)
	}
	if dlq := r.br.DLQ(); len(dlq) != 1 || dlq[0].Key != "junk" {
		t.Fatalf("DLQ %+v, want the undecodable message", dlq)
	}
	if l, _ := r.st.Ledger(context.Background()); len(l) != 1 {
		t.Fatalf("ledger %v: the crashed delivery was not retried", l)
	}
}
