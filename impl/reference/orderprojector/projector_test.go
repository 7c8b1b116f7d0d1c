package orderprojector

import (
	"testing"

	"github.com/idemcheck/idemcheck/impl/contract/hlc"
	"github.com/idemcheck/idemcheck/impl/contract/projector"
	"github.com/idemcheck/idemcheck/internal/hunt"
	"pgregory.net/rapid"
)

// chain is one order's causally ordered events: seq and hlc increase along
// it, occurredAtMs is what a skewed producer clock said (here: going back).
func chain() []Event {
	return []Event{
		{ID: "e1", OrderID: "o1", Kind: projector.OrderCreated, OccurredAtMs: 5000, Seq: 1, HLC: hlc.Timestamp{WallMs: 5000, Node: "A"}},
		{ID: "e2", OrderID: "o1", Kind: projector.OrderPaid, OccurredAtMs: 4000, Seq: 2, HLC: hlc.Timestamp{WallMs: 5000, Logical: 1, Node: "B"}},
		{ID: "e3", OrderID: "o1", Kind: projector.OrderCancelled, OccurredAtMs: 4001, Seq: 3, HLC: hlc.Timestamp{WallMs: 5000, Logical: 2, Node: "B"}},
	}
}

func final(t interface{ Fatalf(string, ...any) }, p Projector, orderID string) OrderState {
	for _, st := range p.Orders() {
		if st.OrderID == orderID {
			return st
		}
	}
	t.Fatalf("order %s not projected", orderID)
	return OrderState{}
}

func TestSeqAndHLCAreIdempotentAndReorderSafe(t *testing.T) {
	for _, c := range []struct {
		name string
		newP func() Projector
	}{{"seq", NewSeq}, {"hlc", NewHLC}} {
		newP := c.newP
		t.Run(c.name, hunt.MakeCheck(func(t *rapid.T) {
			var deliveries []Event
			for _, e := range chain() {
				for range rapid.IntRange(1, 4).Draw(t, "copies") {
					deliveries = append(deliveries, e)
				}
			}
			deliveries = rapid.Permutation(deliveries).Draw(t, "order")
			p := newP()
			applied := 0
			for _, e := range deliveries {
				if p.Apply(e).Applied {
					applied++
				}
			}
			st := final(t, p, "o1")
			if st.Status != projector.Cancelled || st.Last.ID != "e3" {
				t.Fatalf("ended %s after %s; want cancelled after e3", st.Status, st.Last.ID)
			}
			if applied > 3 {
				t.Fatalf("applied %d deliveries of 3 events: a duplicate was applied", applied)
			}
		}))
	}
}

func TestTimestampLWWDropsTheLaterEventFromASlowClock(t *testing.T) {
	p := NewTimestampLWW()
	for _, e := range chain() { // delivered in causal order, once each
		p.Apply(e)
	}
	if st := final(t, p, "o1"); st.Status != projector.Created {
		t.Fatalf("LWW ended %s; the skewed clock should have kept it at created", st.Status)
	}
	d := p.Apply(chain()[0])
	if d.Applied {
		t.Fatalf("LWW re-applied a duplicate: %s", d.Reason)
	}
}

func TestOrdersAreSortedByID(t *testing.T) {
	p := NewSeq()
	for i, id := range []string{"o3", "o1", "o2"} {
		p.Apply(Event{ID: "e" + id, OrderID: id, Kind: projector.OrderCreated, Seq: uint64(i + 1)})
	}
	got := p.Orders()
	if len(got) != 3 || got[0].OrderID != "o1" || got[1].OrderID != "o2" || got[2].OrderID != "o3" {
		t.Fatalf("Orders() = %v; want o1, o2, o3", got)
	}
}
