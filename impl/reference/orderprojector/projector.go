// Package orderprojector holds the reference projectors of the order
// lifecycle events (OrderCreated, OrderPaid, OrderCancelled) into a per-order
// status, implementing impl/contract/projector.
//
// The events arrive at least once and in any order, so a projector must
// decide, per event, whether it is newer than what it already applied. How it
// decides is the whole difference between the three here:
//
//   - NewTimestampLWW trusts the producer's occurredAtMs. It is known-bad:
//     with skewed producer clocks a really later event can look older and be
//     dropped. The harness keeps it to show that bug.
//   - NewSeq trusts the outbox writer's seq (see package outbox).
//   - NewHLC trusts the producer's hybrid logical clock (see package hybridclock).
package orderprojector

import (
	"slices"
	"strconv"
	"strings"

	"github.com/idemcheck/idemcheck/impl/contract/hlc"

	"github.com/idemcheck/idemcheck/impl/contract/projector"
)

// The contract's types, under the names this package's code uses.
type (
	Projector  = projector.Projector
	Event      = projector.Event
	OrderState = projector.OrderState
	Decision   = projector.Decision
)

// newerFunc judges a delivered event against the last one applied for its
// order, and says why.
type newerFunc func(e, last Event) (bool, string)

// guarded is a projector that applies an event only when newer says so: the
// shape all three projectors share, so that they differ only in what they
// trust.
type guarded struct {
	newer  newerFunc
	orders map[string]OrderState
}

func newGuarded(newer newerFunc) *guarded {
	return &guarded{newer: newer, orders: map[string]OrderState{}}
}

// Apply implements Projector.
func (g *guarded) Apply(e Event) Decision {
	reason := "first event of the order"
	if st, ok := g.orders[e.OrderID]; ok {
		var newer bool
		if newer, reason = g.newer(e, st.Last); !newer {
			return Decision{Reason: reason}
		}
	}
	g.orders[e.OrderID] = OrderState{OrderID: e.OrderID, Status: e.Kind.Status(), Last: e}
	return Decision{Applied: true, Reason: reason}
}

// Orders implements Projector.
func (g *guarded) Orders() []OrderState { return SortedStates(g.orders) }

// SortedStates returns the states of m sorted by order id, as
// Projector.Orders must.
func SortedStates(m map[string]OrderState) []OrderState {
	out := make([]OrderState, 0, len(m))
	for _, st := range m {
		out = append(out, st)
	}
	slices.SortFunc(out, func(a, b OrderState) int { return strings.Compare(a.OrderID, b.OrderID) })
	return out
}

// NewTimestampLWW returns the known-bad last-write-wins projector: it applies
// an event only if its producer occurredAtMs is newer than the last applied
// one's. Duplicates are harmless and so is reordering, as long as the
// producers' clocks agree; when they do not, a causally later event from a
// node whose clock is behind looks older and is dropped.
func NewTimestampLWW() Projector {
	return newGuarded(func(e, last Event) (bool, string) {
		if e.OccurredAtMs > last.OccurredAtMs {
			return true, reason("occurredAt ", e.OccurredAtMs, " > last applied ", last.OccurredAtMs, "")
		}
		return false, reason("occurredAt ", e.OccurredAtMs, " is not newer than last applied ", last.OccurredAtMs, "")
	})
}

// NewSeq returns the sequence projector: it applies an event only if its seq
// is greater than the last applied one's. seq is assigned by one writer in
// commit order, so causally later events have greater seq; a duplicate has an
// equal seq and a stale event a smaller one, and both are dropped.
func NewSeq() Projector {
	return newGuarded(func(e, last Event) (bool, string) {
		if e.Seq > last.Seq {
			return true, seqReason(e.Seq, " > last applied ", last.Seq, "")
		}
		return false, seqReason(e.Seq, " <= last applied ", last.Seq, ": duplicate or stale")
	})
}

// NewHLC returns the HLC projector: it applies an event only if its HLC stamp
// is greater than the last applied one's. A correct HLC orders causally later
// events after earlier ones whatever the clock skew, and the order is total,
// so replicas agree whatever the delivery order.
func NewHLC() Projector {
	return newGuarded(func(e, last Event) (bool, string) {
		if last.HLC.Less(e.HLC) {
			return true, hlcReason(e.HLC, " > last applied ", last.HLC, "")
		}
		return false, hlcReason(e.HLC, " <= last applied ", last.HLC, ": duplicate or stale")
	})
}

// The reasons are built in one allocation, without fmt: a projector
// explains every delivery, and in a campaign the explanation would cost
// more than the decision.

// reason is "<what><n><op><last><suffix>".
func reason(what string, n int64, op string, last int64, suffix string) string {
	var buf [128]byte
	b := strconv.AppendInt(append(buf[:0], what...), n, 10)
	b = strconv.AppendInt(append(b, op...), last, 10)
	return string(append(b, suffix...))
}

// seqReason is "seq <n><op><last><suffix>".
func seqReason(n uint64, op string, last uint64, suffix string) string {
	var buf [128]byte
	b := strconv.AppendUint(append(buf[:0], "seq "...), n, 10)
	b = strconv.AppendUint(append(b, op...), last, 10)
	return string(append(b, suffix...))
}

// hlcReason is "hlc <e><op><last><suffix>".
func hlcReason(e hlc.Timestamp, op string, last hlc.Timestamp, suffix string) string {
	var buf [160]byte
	b := e.AppendTo(append(buf[:0], "hlc "...))
	b = last.AppendTo(append(b, op...))
	return string(append(b, suffix...))
}
