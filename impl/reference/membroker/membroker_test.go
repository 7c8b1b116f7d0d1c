package membroker

import (
	"testing"

	"github.com/idemcheck/idemcheck/impl/contract/broker"
	"github.com/idemcheck/idemcheck/impl/contract/clock"
)

func newTest(t *testing.T) (*Broker, *clock.Virtual) {
	t.Helper()
	c := clock.NewVirtual(0)
	return New(c, Policy{MaxAttempts: 3, BackoffMs: 100, MaxBackoffMs: 300, AckTimeoutMs: 1000}, []string{"g"}), c
}

func TestBackoffIsExponentialAndCapped(t *testing.T) {
	p := Policy{BackoffMs: 100, MaxBackoffMs: 350}
	for attempts, want := range map[int]int64{1: 100, 2: 200, 3: 350, 9: 350} {
		if got := p.Backoff(attempts); got != want {
			t.Errorf("Backoff(%d) = %d, want %d", attempts, got, want)
		}
	}
}

func TestAttemptsCountDeliveriesNotProduces(t *testing.T) {
	b, c := newTest(t)
	b.Enqueue("orders", "", "e1", []byte("{}"), broker.Produced)
	if m := b.Messages()[0].Message; m.Attempts != 0 {
		t.Fatalf("attempts after produce = %d, want 0", m.Attempts)
	}
	d, ok := b.Deliver("g", 0)
	if !ok || d.Message.Attempts != 1 {
		t.Fatalf("first delivery attempts = %d (ok=%v), want 1", d.Message.Attempts, ok)
	}
	b.Nack(d, "boom")
	if _, ok := b.Deliver("g", 0); ok {
		t.Fatal("redelivered before the backoff elapsed")
	}
	c.Advance(100)
	d2, ok := b.Deliver("g", 0)
	if !ok || d2.Message.Attempts != 2 || d2.Message.LastError != "boom" {
		t.Fatalf("second delivery = %+v, want attempts 2 and last_error boom", d2.Message)
	}
}

func TestAckTimeoutRedeliversWithLastError(t *testing.T) {
	b, c := newTest(t)
	b.Enqueue("orders", "", "e1", nil, broker.Produced)
	b.Deliver("g", 0)
	c.Advance(999)
	if _, ok := b.Deliver("g", 0); ok {
		t.Fatal("redelivered before the ack timeout")
	}
	c.Advance(1)
	d, ok := b.Deliver("g", 0)
	if !ok || d.Message.LastError != "ack_timeout" || d.Message.Attempts != 2 {
		t.Fatalf("after ack timeout got %+v (ok=%v)", d.Message, ok)
	}
}

func TestMaxAttemptsRoutesToDLQWithContext(t *testing.T) {
	b, c := newTest(t)
	b.Enqueue("orders", "acme", "e1", nil, broker.Produced)
	for i := 1; i <= 3; i++ {
		d, ok := b.Deliver("g", 0)
		if !ok {
			t.Fatalf("delivery %d missing", i)
		}
		b.Nack(d, "transient")
		c.Advance(1000)
	}
	if _, ok := b.Deliver("g", 0); ok {
		t.Fatal("delivered beyond max_attempts")
	}
	dlq := b.DLQ()
	want := DLQEntry{Topic: "orders", Offset: 0, Group: "g", Attempts: 3, LastError: "transient", Tenant: "acme", Key: "e1"}
	if len(dlq) != 1 || dlq[0] != want {
		t.Fatalf("DLQ = %+v, want [%+v]", dlq, want)
	}
	if broker.DLQTopic("orders") != "dlq.orders" {
		t.Fatal("DLQ topic name")
	}
}

func TestAckSettlesAndStaleNackIsIgnored(t *testing.T) {
	b, c := newTest(t)
	b.Enqueue("orders", "", "e1", nil, broker.Produced)
	d1, _ := b.Deliver("g", 0)
	c.Advance(1000) // ack timeout: redelivered
	d2, ok := b.Deliver("g", 0)
	if !ok {
		t.Fatal("no redelivery")
	}
	b.Nack(d1, "late") // superseded delivery: ignored
	if st := b.Messages()[0].Status; st != broker.Inflight {
		t.Fatalf("stale nack changed status to %s", st)
	}
	b.Ack(d2)
	if quiet, _ := b.Quiet(); !quiet {
		t.Fatal("broker not quiet after ack")
	}
}

func TestDeliverPicksAmongEligible(t *testing.T) {
	b, _ := newTest(t)
	for _, k := range []string{"a", "b", "c"} {
		b.Enqueue("orders", "", k, nil, broker.Produced)
	}
	d, _ := b.Deliver("g", 4) // 4 mod 3 = 1
	if d.Message.Key != "b" {
		t.Fatalf("pick 4 delivered %s, want b", d.Message.Key)
	}
}

func TestDuplicateAndReplayMakeNewMessages(t *testing.T) {
	b, _ := newTest(t)
	b.Enqueue("orders", "", "e1", []byte("x"), broker.Produced)
	offs, err := b.Duplicate("orders", 0, 2)
	if err != nil || len(offs) != 2 {
		t.Fatalf("Duplicate = %v, %v", offs, err)
	}
	if _, err := b.Duplicate("orders", 9, 1); err == nil {
		t.Fatal("duplicating a missing offset succeeded")
	}
	if got := len(b.Replay("orders")); got != 3 {
		t.Fatalf("replay enqueued %d, want 3", got)
	}
	for _, m := range b.Messages()[1:3] {
		if m.Message.Origin != broker.Duplicated || string(m.Message.Payload) != "x" {
			t.Fatalf("duplicate %+v", m.Message)
		}
	}
}

func TestDLQHoldsAMessageOnce(t *testing.T) {
	b, c := newTest(t)
	b.Enqueue("orders", "", "e1", nil, broker.Produced)
	slow, _ := b.Deliver("g", 0)
	for i := 2; i <= 3; i++ { // two more deliveries exhaust max_attempts=3
		c.Advance(1000)
		d, ok := b.Deliver("g", 0)
		if !ok {
			t.Fatalf("delivery %d missing", i)
		}
		b.Nack(d, "locked")
		c.Advance(1000)
	}
	b.DeadLetter(slow, "poison") // the slow first holder finds it is poison
	if dlq := b.DLQ(); len(dlq) != 1 || dlq[0].LastError != "locked" {
		t.Fatalf("DLQ %+v, want the broker's single entry", dlq)
	}
}
