package mutant

import (
	"context"
	"testing"

	"github.com/idemcheck/idemcheck/impl/contract/broker"
	"github.com/idemcheck/idemcheck/impl/contract/clock"
	"github.com/idemcheck/idemcheck/impl/contract/hlc"
	"github.com/idemcheck/idemcheck/impl/contract/projector"
	"github.com/idemcheck/idemcheck/impl/contract/store"
	"github.com/idemcheck/idemcheck/impl/reference/hybridclock"
	"github.com/idemcheck/idemcheck/impl/reference/membroker"
	"github.com/idemcheck/idemcheck/impl/reference/producer"
)

// These tests pin each mutant's bug at the level of its own part; the
// properties package proves the harness catches each one end to end.

func TestBrokerMutantsMisbehave(t *testing.T) {
	c := clock.NewVirtual(0)
	p := broker.Policy{MaxAttempts: 2, BackoffMs: 1, MaxBackoffMs: 1, AckTimeoutMs: 10}
	deliveries := func(b broker.Broker) int {
		b.Enqueue("t", "", "k", nil, broker.Produced)
		n := 0
		for n < 10 {
			d, ok := b.Deliver("g", 0)
			if !ok {
				c.Advance(1) // let the backoff elapse
				if d, ok = b.Deliver("g", 0); !ok {
					break
				}
			}
			n++
			b.Nack(d, "x")
		}
		return n
	}
	if n := deliveries(membroker.New(c, p, []string{"g"})); n != 2 {
		t.Fatalf("reference delivered %d times, want 2", n)
	}
	if n := deliveries(NewMaxAttemptsOffByOne(c, p, []string{"g"})); n != 3 {
		t.Fatalf("off-by-one delivered %d times, want 3", n)
	}
	if n := deliveries(NewNoRetryBound(c, p, []string{"g"})); n != 10 {
		t.Fatalf("no-retry-bound delivered %d times, want the test's cap 10", n)
	}
	for _, b := range []broker.Broker{NewMaxAttemptsOffByOne(c, p, nil), NewNoRetryBound(c, p, nil), NewAttemptsCountedOnProduce(c, p, nil)} {
		if b.Policy() != p {
			t.Fatalf("a mutant broker reports policy %+v, want the scenario's %+v", b.Policy(), p)
		}
	}
	b := NewAttemptsCountedOnProduce(c, p, []string{"g"})
	b.Enqueue("t", "", "k", nil, broker.Produced)
	if m := b.Messages()[0].Message; m.Attempts != 1 {
		t.Fatalf("attempts-counted-on-produce shows %d attempts before any delivery, want 1", m.Attempts)
	}
	d, _ := b.Deliver("g", 0)
	if d.Message.Attempts != 2 {
		t.Fatalf("attempts-counted-on-produce first delivery shows %d, want 2", d.Message.Attempts)
	}
	b.Nack(d, "x") // 2 attempts shown: max_attempts=2 reached after one delivery
	if dlq := b.DLQ(); len(dlq) != 1 || dlq[0].Attempts != 2 {
		t.Fatalf("attempts-counted-on-produce DLQ %+v, want one entry after one delivery showing attempts 2", dlq)
	}
	bare := NewDLQEntryWithoutContext(c, p, []string{"g"})
	bare.Enqueue("t", "", "k", nil, broker.Produced)
	d, _ = bare.Deliver("g", 0)
	bare.DeadLetter(d, "poison")
	if e := bare.DLQ()[0]; e.Attempts != 0 || e.LastError != "" {
		t.Fatalf("bare DLQ entry kept context: %+v", e)
	}
}

// The attempts-on-produce broker backs off as if each delivery were one
// attempt later: after its first delivery, the reference's second backoff.
func TestAttemptsCountedOnProduceBacksOffOnTheInflatedCount(t *testing.T) {
	c := clock.NewVirtual(0)
	p := broker.Policy{MaxAttempts: 5, BackoffMs: 100, MaxBackoffMs: 1000, AckTimeoutMs: 10_000}
	b := NewAttemptsCountedOnProduce(c, p, []string{"g"})
	b.Enqueue("t", "", "k", nil, broker.Produced)
	d, _ := b.Deliver("g", 0)
	b.Nack(d, "x")
	if _, next := b.Quiet(); next != p.Backoff(2) {
		t.Fatalf("redelivery at %d, want the backoff of attempt 2, %d", next, p.Backoff(2))
	}
}

func TestProducerGateMissingEnqueuesACommittedKeyAgain(t *testing.T) {
	br := membroker.New(clock.NewVirtual(0), broker.Policy{MaxAttempts: 1, BackoffMs: 1, MaxBackoffMs: 1, AckTimeoutMs: 1}, []string{"g"})
	p := &producer.Producer{Gate: NewProducerGateMissing(), Broker: br}
	p.Produce("orders", "", "e1", nil)
	if r, _ := p.Produce("orders", "", "e1", nil); r.Decision != broker.Proceed || len(br.Messages()) != 2 {
		t.Fatalf("retry of a committed produce: %s with %d messages; the bug enqueues it again", r.Decision, len(br.Messages()))
	}
	d, _ := br.Deliver("g", 0)
	p.PublishDLQ(d, "poison")
	if got := p.PublishDLQ(d, "poison"); got != broker.Proceed {
		t.Fatalf("second DLQ publish through the missing gate: %s, want proceed", got)
	}
}

const start = 1_700_000_000_000

func TestHLCNoMergeLosesCausalityUnderSkew(t *testing.T) {
	truth := clock.NewVirtual(start)
	a := hybridclock.New("A", clock.NewNode("A", truth, +180_000))
	b := NewHLCNoMerge("B", clock.NewNode("B", truth, -180_000))
	sent := a.Tick()
	if got, err := b.Merge(sent); err != nil || !got.Less(sent) {
		t.Fatalf("no-merge mutant returned %s for remote %s; the bug should make it earlier", got, sent)
	}
}

func TestHLCBackwardsOnStepGoesBackOnlyAfterAStep(t *testing.T) {
	truth := clock.NewVirtual(start)
	wall := clock.NewNode("A", truth, 0)
	c := NewHLCBackwardsOnStep("A", wall)
	prev := c.Tick()
	for range 3 { // without a step it is the reference
		truth.Advance(1)
		got := c.Tick()
		if !prev.Less(got) {
			t.Fatalf("without a step the mutant went from %s to %s", prev, got)
		}
		prev = got
	}
	wall.Step(-60_000)
	got := c.Tick()
	if !got.Less(prev) {
		t.Fatalf("after a step back the mutant went from %s to %s; the bug should go backwards", prev, got)
	}
	if want := (hlc.Timestamp{WallMs: wall.NowMs(), Logical: 1, Node: "A"}); got != want {
		t.Fatalf("after a step back the mutant stamped %s, want %s: it restarts from the reading", got, want)
	}
	// Its merge still dominates the remote stamp: only its own past is lost.
	wall.Step(-60_000)
	remote := hlc.Timestamp{WallMs: start - 200_000, Node: "B"}
	if got, err := c.Merge(remote); err != nil || !remote.Less(got) {
		t.Fatalf("mutant merge %s is not later than remote %s", got, remote)
	}
}

func TestDedupOnlyProjectorLetsTheLastArrivalWin(t *testing.T) {
	ev := func(id string, k projector.Kind, seq uint64) projector.Event {
		return projector.Event{ID: id, OrderID: "o1", Kind: k, Seq: seq}
	}
	c := []projector.Event{ev("e1", projector.OrderCreated, 1), ev("e2", projector.OrderPaid, 2), ev("e3", projector.OrderCancelled, 3)}
	p := NewDedupOnlyProjector()
	for _, e := range []projector.Event{c[2], c[0], c[0], c[1]} {
		p.Apply(e)
	}
	if st := p.Orders(); len(st) != 1 || st[0].Status != projector.Paid {
		t.Fatalf("dedup-only ended %+v; the bug should leave the last arrival (paid)", st)
	}
	if d := p.Apply(c[2]); d.Applied {
		t.Fatalf("dedup-only re-applied a duplicate")
	}
}

func TestStoreMutants(t *testing.T) {
	ctx := context.Background()
	c := clock.NewVirtual(start)
	k := func(consumer string) store.Key { return store.Key{Consumer: consumer, ID: "e1"} }

	unscoped := NewDedupeKeyWithoutConsumer(c)
	cl, _ := unscoped.Claim(ctx, k("ledger"), 100)
	tx, _ := unscoped.Begin(ctx, k("ledger"), cl.Token)
	if _, err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if got, _ := unscoped.Claim(ctx, k("audit"), 100); got.Outcome != store.AlreadyProcessed {
		t.Fatalf("another group's claim answered %s; the bug hides the event from it", got.Outcome)
	}

	leaseless := NewClaimLeftInProcessingStore(c)
	leaseless.Claim(ctx, k("ledger"), 100)
	c.Advance(1_000_000)
	if got, _ := leaseless.Claim(ctx, k("ledger"), 100); got.Outcome != store.Locked {
		t.Fatalf("a claim long after the lease answered %s; the bug holds it forever", got.Outcome)
	}

	doubled := NewDedupeInMemoryOnlyStore(c)
	e := store.Entry{Consumer: "ledger", EventID: "e1", AmountCents: 5}
	a := doubled.(interface {
		Append(context.Context, store.Entry) error
	})
	a.Append(ctx, e)
	a.Append(ctx, e)
	if l, _ := doubled.Ledger(ctx); len(l) != 2 {
		t.Fatalf("ledger without unique constraint holds %d rows after two appends, want 2", len(l))
	}
}
