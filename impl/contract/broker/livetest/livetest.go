// Package livetest is the contract suite of a live broker
// (impl/contract/broker.LiveFactory): any adapter runs it from its own
// tests with one call. Claims says which guarantees the configuration is
// meant to give, so a configuration built to show a broken guarantee runs
// the suite too, and the suite checks that the guarantee is indeed absent
// where that is observable in one message's life.
package livetest

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/impl/contract/broker"
)

// Claims are the guarantees a configuration gives.
type Claims struct {
	// Bounded: a message is not delivered after max_attempts deliveries.
	Bounded bool
	// DLQ: a message whose attempts are spent reaches dlq.<topic> carrying
	// attempts = max_attempts and a last error.
	DLQ bool
	// LastError: that last error is the last nack's reason.
	LastError bool
	// Counts: every delivery carries its exact attempt number (a broker
	// that keeps only a redelivered flag does not).
	Counts bool
	// Dedupe: a produce repeating a key moments later is dropped.
	Dedupe bool
}

// Policy is the retry policy the suite runs under.
var Policy = broker.Policy{MaxAttempts: 3, BackoffMs: 5, MaxBackoffMs: 20, AckTimeoutMs: 60}

// wait is how long the suite waits for a delivery that must come.
const wait = 3 * time.Second

// quiet is how long the suite waits to be sure nothing more comes.
func quiet() time.Duration {
	return time.Duration(3*(Policy.AckTimeoutMs+Policy.MaxBackoffMs)) * time.Millisecond
}

type rig struct {
	t    *testing.T
	ctx  context.Context
	live broker.Live
}

func open(t *testing.T, f broker.LiveFactory, groups ...string) *rig {
	t.Helper()
	return openSpec(t, f, broker.LiveSpec{Topic: "orders", Groups: groups, Policy: Policy})
}

func openSpec(t *testing.T, f broker.LiveFactory, spec broker.LiveSpec) *rig {
	t.Helper()
	ctx := t.Context()
	l, err := f.Open(ctx, spec)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	t.Cleanup(func() {
		if err := l.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return &rig{t: t, ctx: ctx, live: l}
}

func (r *rig) produce(key string) broker.ProduceResult {
	r.t.Helper()
	res, err := r.live.Produce(r.ctx, "acme", key, fmt.Appendf(nil, `{"eventId":%q}`, key))
	if err != nil {
		r.t.Fatalf("produce %s: %v", key, err)
	}
	return res
}

func (r *rig) session(group string) broker.Session {
	r.t.Helper()
	s, err := r.live.Session(r.ctx, group)
	if err != nil {
		r.t.Fatalf("session %s: %v", group, err)
	}
	r.t.Cleanup(func() { _ = s.Close() })
	return s
}

func (r *rig) next(s broker.Session, what string) broker.LiveDelivery {
	r.t.Helper()
	deadline := time.Now().Add(wait)
	for time.Now().Before(deadline) {
		d, ok, err := s.Next(r.ctx, 50*time.Millisecond)
		if err != nil {
			r.t.Fatalf("%s: next: %v", what, err)
		}
		if ok {
			return d
		}
	}
	r.t.Fatalf("%s: no delivery within %s", what, wait)
	return broker.LiveDelivery{}
}

func (r *rig) none(s broker.Session, what string) {
	r.t.Helper()
	deadline := time.Now().Add(quiet())
	for time.Now().Before(deadline) {
		d, ok, err := s.Next(r.ctx, 20*time.Millisecond)
		if err != nil {
			r.t.Fatalf("%s: next: %v", what, err)
		}
		if ok {
			r.t.Fatalf("%s: unexpected delivery of %s (offset %d, attempt %d)", what, d.Message.Key, d.Message.Offset, d.Message.Attempts)
		}
	}
}

func (r *rig) ack(s broker.Session, d broker.LiveDelivery) {
	r.t.Helper()
	if err := s.Ack(r.ctx, d); err != nil {
		r.t.Fatalf("ack: %v", err)
	}
}

func (r *rig) dlq(want int, within time.Duration) []broker.DLQEntry {
	r.t.Helper()
	deadline := time.Now().Add(within)
	for {
		got, err := r.live.DLQ(r.ctx)
		if err != nil {
			r.t.Fatalf("dlq: %v", err)
		}
		if len(got) >= want || time.Now().After(deadline) {
			return got
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Run runs the contract suite against f.
func Run(t *testing.T, f broker.LiveFactory, c Claims) {
	t.Run("deliver-ack", func(t *testing.T) {
		r := open(t, f, "ledger", "email")
		a, b := r.produce("e1"), r.produce("e2")
		if a.Duplicate || b.Duplicate || a.Offset == b.Offset {
			t.Fatalf("two keys: got %+v and %+v, want two new messages", a, b)
		}
		for _, g := range []string{"ledger", "email"} {
			s := r.session(g)
			seen := map[string]bool{}
			for range 2 {
				d := r.next(s, g)
				if d.Message.Attempts != 1 || d.Message.Group != g || d.Message.Tenant != "acme" {
					t.Fatalf("%s: first delivery %+v: want attempts 1, group %s, tenant acme", g, d.Message, g)
				}
				seen[d.Message.Key] = true
				r.ack(s, d)
			}
			if !seen["e1"] || !seen["e2"] {
				t.Fatalf("%s: got %v, want e1 and e2", g, seen)
			}
			r.none(s, g+" after acks")
		}
	})
	t.Run("nack-redelivers-counting-attempts", func(t *testing.T) {
		r := open(t, f, "ledger")
		r.produce("e1")
		s := r.session("ledger")
		d := r.next(s, "first")
		if err := s.Nack(r.ctx, d, 5*time.Millisecond, "transient: boom"); err != nil {
			t.Fatal(err)
		}
		d2 := r.next(s, "after nack")
		if d2.Message.Offset != d.Message.Offset || (c.Counts && d2.Message.Attempts != 2) {
			t.Fatalf("after nack: got offset %d attempt %d, want offset %d attempt 2", d2.Message.Offset, d2.Message.Attempts, d.Message.Offset)
		}
		r.ack(s, d2)
		r.none(s, "after ack")
	})
	t.Run("crash-redelivers", func(t *testing.T) {
		r := open(t, f, "ledger")
		r.produce("e1")
		s := r.session("ledger")
		d := r.next(s, "first")
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		s2 := r.session("ledger")
		d2 := r.next(s2, "after crash")
		if d2.Message.Offset != d.Message.Offset || (c.Counts && d2.Message.Attempts != 2) {
			t.Fatalf("after crash: got offset %d attempt %d, want offset %d attempt 2", d2.Message.Offset, d2.Message.Attempts, d.Message.Offset)
		}
		r.ack(s2, d2)
	})
	if f.Caps().AckTimeout {
		t.Run("ack-timeout-redelivers", func(t *testing.T) {
			r := open(t, f, "ledger")
			r.produce("e1")
			s := r.session("ledger")
			d := r.next(s, "first")
			d2 := r.next(s, "after the ack timeout")
			if d2.Message.Offset != d.Message.Offset || d2.Message.Attempts != 2 {
				t.Fatalf("after ack timeout: got offset %d attempt %d, want offset %d attempt 2", d2.Message.Offset, d2.Message.Attempts, d.Message.Offset)
			}
			r.ack(s, d2)
		})
	}
	t.Run("exhaustion", func(t *testing.T) {
		r := open(t, f, "ledger")
		r.produce("e1")
		s := r.session("ledger")
		for i := 1; i <= Policy.MaxAttempts; i++ {
			d := r.next(s, fmt.Sprintf("attempt %d", i))
			if c.Counts && d.Message.Attempts != i {
				t.Fatalf("delivery %d reports attempts %d", i, d.Message.Attempts)
			}
			if err := s.Nack(r.ctx, d, time.Millisecond, fmt.Sprintf("transient: try %d", i)); err != nil {
				t.Fatal(err)
			}
		}
		if c.Bounded {
			r.none(s, "after max_attempts")
		}
		// A configuration without a DLQ gets the quiet period to prove it.
		within := wait
		if !c.DLQ {
			within = quiet()
		}
		dlq := r.dlq(1, within)
		if !c.DLQ {
			if len(dlq) != 0 {
				t.Fatalf("this configuration claims no DLQ, yet it holds %+v", dlq)
			}
			return
		}
		want := broker.DLQEntry{Topic: "orders", Group: "ledger", Attempts: Policy.MaxAttempts,
			LastError: fmt.Sprintf("transient: try %d", Policy.MaxAttempts), Tenant: "acme", Key: "e1"}
		if len(dlq) != 1 {
			t.Fatalf("DLQ holds %d entries, want 1", len(dlq))
		}
		got := dlq[0]
		got.Offset = 0
		if !c.LastError && got.LastError != "" {
			want.LastError = got.LastError
		}
		if got != want {
			t.Fatalf("DLQ entry %+v, want %+v", got, want)
		}
	})
	t.Run("dead-letter", func(t *testing.T) {
		r := open(t, f, "ledger")
		r.produce("e1")
		s := r.session("ledger")
		d := r.next(s, "first")
		if err := s.DeadLetter(r.ctx, d, "poison: bad amount"); err != nil {
			t.Fatal(err)
		}
		r.ack(s, d)
		dlq := r.dlq(1, wait)
		if len(dlq) != 1 || !dlq[0].Poison || dlq[0].LastError != "poison: bad amount" || dlq[0].Key != "e1" || dlq[0].Attempts != 1 {
			t.Fatalf("DLQ %+v, want one poison entry for e1 after 1 attempt", dlq)
		}
	})
	t.Run("produce-dedupe", func(t *testing.T) {
		r := open(t, f, "ledger")
		first := r.produce("e1")
		again := r.produce("e1")
		if again.Duplicate != c.Dedupe {
			t.Fatalf("a repeated produce: duplicate=%v, this configuration claims dedupe=%v", again.Duplicate, c.Dedupe)
		}
		if c.Dedupe && again.Offset != first.Offset {
			t.Fatalf("a dropped repeat names offset %d, want the original's %d", again.Offset, first.Offset)
		}
	})
	if f.Caps().Restart {
		t.Run("restart-keeps-messages", func(t *testing.T) {
			r := openSpec(t, f, broker.LiveSpec{Topic: "orders", Groups: []string{"ledger"}, Policy: Policy, Durable: true})
			r.produce("e1")
			first := r.produce("e2")
			r.produce("e3")
			// e1 is acked before the restart, e2 is in flight (delivered,
			// never acked) and e3 never delivered.
			s := r.session("ledger")
			d1 := r.next(s, "e1 before restart")
			if d1.Message.Key != "e1" {
				t.Fatalf("first delivery %q, want e1", d1.Message.Key)
			}
			r.ack(s, d1)
			d2 := r.next(s, "e2 before restart")
			if d2.Message.Key != "e2" {
				t.Fatalf("second delivery %q, want e2", d2.Message.Key)
			}
			rr, ok := r.live.(broker.Restarter)
			if !ok {
				t.Fatal("caps claim restart, but the live broker is no broker.Restarter")
			}
			if err := rr.Restart(r.ctx); err != nil {
				t.Fatalf("restart: %v", err)
			}
			_ = s.Close()
			// The storage kept the producer's dedupe state too.
			if again := r.produce("e2"); c.Dedupe && (!again.Duplicate || again.Offset != first.Offset) {
				t.Fatalf("a repeat of e2 after the restart: %+v, want a duplicate of offset %d", again, first.Offset)
			}
			s2 := r.session("ledger")
			got := map[string]broker.LiveDelivery{}
			for len(got) < 2 {
				d := r.next(s2, "after restart")
				if d.Message.Key == "e1" {
					t.Fatalf("e1, acked before the restart, was delivered again after it")
				}
				got[d.Message.Key] = d
				r.ack(s2, d)
			}
			if _, ok := got["e3"]; !ok {
				t.Fatalf("after restart got %v, want e2 and e3", got)
			}
			if d := got["e2"]; c.Counts && d.Message.Attempts != 2 {
				t.Fatalf("e2, in flight at the restart, came back with attempts %d, want 2", d.Message.Attempts)
			}
			r.none(s2, "after the restart's messages were acked")
		})
	}
}

// IsDown reports whether err says the broker is unreachable.
func IsDown(err error) bool { return errors.Is(err, broker.ErrBrokerDown) }
