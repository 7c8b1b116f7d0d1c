package producer

import (
	"errors"
	"testing"

	"github.com/idemcheck/idemcheck/impl/contract/broker"
	"github.com/idemcheck/idemcheck/impl/contract/clock"
	"github.com/idemcheck/idemcheck/impl/reference/membroker"
)

func newProducer(g broker.Gate) *Producer {
	b := membroker.New(clock.NewVirtual(0), broker.Policy{MaxAttempts: 3, BackoffMs: 1, MaxBackoffMs: 1, AckTimeoutMs: 1}, []string{"g"})
	return &Producer{Gate: g, Broker: b}
}

func TestCommittedKeyIsNotEnqueuedTwice(t *testing.T) {
	p := newProducer(NewGate())
	if r, err := p.Produce("orders", "", "e1", nil); err != nil || r.Decision != broker.Proceed {
		t.Fatalf("first produce: %+v %v", r, err)
	}
	r, err := p.Produce("orders", "", "e1", nil)
	if err != nil || r.Decision != broker.AlreadyCommitted {
		t.Fatalf("retry of a committed produce: %+v %v", r, err)
	}
	if n := len(p.Broker.Messages()); n != 1 {
		t.Fatalf("%d messages enqueued, want 1", n)
	}
	// Identity includes tenant and topic.
	if r, _ := p.Produce("orders", "acme", "e1", nil); r.Decision != broker.Proceed {
		t.Fatalf("same key under another tenant: %s", r.Decision)
	}
}

func TestPendingIsRejectedAndFailedIsRetryable(t *testing.T) {
	g := NewGate()
	id := broker.Identity{Topic: "orders", Key: "e1"}
	if d := g.Begin(id); d != broker.Proceed {
		t.Fatalf("begin: %s", d)
	}
	if d := g.Begin(id); d != broker.Rejected {
		t.Fatalf("begin while pending: %s, want rejected", d)
	}
	g.Fail(id)
	if g.State(id) != broker.GateFailed {
		t.Fatalf("state after fail: %s", g.State(id))
	}
	if d := g.Begin(id); d != broker.Proceed || g.State(id) != broker.GatePending {
		t.Fatalf("retry after FAILED: %s in state %s, want proceed to PENDING", d, g.State(id))
	}
	p := newProducer(g)
	if _, err := p.Produce("orders", "", "e1", nil); !errors.Is(err, broker.ErrPending) {
		t.Fatalf("produce of a pending key: %v, want broker.ErrPending", err)
	}
}

func TestProduceFailingRecordsFailed(t *testing.T) {
	p := newProducer(NewGate())
	if _, err := p.ProduceFailing("orders", "", "e1"); err == nil {
		t.Fatal("failing produce returned no error")
	}
	if n := len(p.Broker.Messages()); n != 0 {
		t.Fatalf("failing produce enqueued %d", n)
	}
	if r, err := p.Produce("orders", "", "e1", nil); err != nil || r.Decision != broker.Proceed {
		t.Fatalf("retry after failure: %+v %v", r, err)
	}
}

func TestEmptyKeyMeansNoIdempotency(t *testing.T) {
	p := newProducer(NewGate())
	p.Produce("orders", "", "", nil)
	p.Produce("orders", "", "", nil)
	if n := len(p.Broker.Messages()); n != 2 {
		t.Fatalf("%d messages for two unkeyed produces, want 2", n)
	}
}

func TestPublishDLQGoesThroughTheGate(t *testing.T) {
	for _, tc := range []struct {
		gate broker.Gate
		want broker.Decision
	}{{NewGate(), broker.AlreadyCommitted}} {
		p := newProducer(tc.gate)
		p.Produce("orders", "", "e1", nil)
		d, _ := p.Broker.Deliver("g", 0)
		if got := p.PublishDLQ(d, "poison"); got != broker.Proceed {
			t.Fatalf("first DLQ publish: %s", got)
		}
		if got := p.PublishDLQ(d, "poison"); got != tc.want {
			t.Fatalf("second DLQ publish %s, want %s", got, tc.want)
		}
		// Either way the DLQ, keyed by message identity, holds it once.
		if n := len(p.Broker.DLQ()); n != 1 {
			t.Fatalf("%d DLQ entries, want 1", n)
		}
	}
}
