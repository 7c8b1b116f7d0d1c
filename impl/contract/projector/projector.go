// Package projector is the contract of an order projector: it consumes the
// order lifecycle events (OrderCreated, OrderPaid, OrderCancelled), delivered
// at least once and in any order, into a per-order status.
//
// The reference projectors are impl/reference/orderprojector.
package projector

import (
	"fmt"

	"github.com/idemcheck/idemcheck/impl/contract/hlc"
)

// Kind names an order lifecycle event.
type Kind string

// The order lifecycle events.
const (
	OrderCreated   Kind = "OrderCreated"
	OrderPaid      Kind = "OrderPaid"
	OrderCancelled Kind = "OrderCancelled"
)

// Status is an order's projected state.
type Status string

// The projected statuses.
const (
	Created   Status = "created"
	Paid      Status = "paid"
	Cancelled Status = "cancelled"
)

// Status is the status an order is in right after an event of kind k; empty
// for an unknown kind.
func (k Kind) Status() Status {
	switch k {
	case OrderCreated:
		return Created
	case OrderPaid:
		return Paid
	case OrderCancelled:
		return Cancelled
	}
	return ""
}

// Event is an order lifecycle event as a projector receives it.
type Event struct {
	ID      string `json:"eventId"`
	OrderID string `json:"orderId"`
	Kind    Kind   `json:"kind"`
	// OccurredAtMs is the producer's local wall clock when it emitted the
	// event: fine for display, wrong for ordering.
	OccurredAtMs int64 `json:"occurredAtMs"`
	// Seq is assigned by the outbox writer.
	Seq uint64 `json:"seq"`
	// HLC is the producer's hybrid logical clock stamp.
	HLC hlc.Timestamp `json:"hlc"`
}

// String is a short human form for traces.
func (e Event) String() string {
	return fmt.Sprintf("%s %s %s (seq %d, hlc %s, occurredAt %d)", e.ID, e.Kind, e.OrderID, e.Seq, e.HLC, e.OccurredAtMs)
}

// OrderState is what a projector holds for one order: its status and the
// event it last applied, against which newer events are judged.
type OrderState struct {
	OrderID string `json:"orderId"`
	Status  Status `json:"status"`
	Last    Event  `json:"last"`
}

// Decision is what a projector did with one delivered event.
type Decision struct {
	Applied bool
	// Reason says why, for the trace.
	Reason string
}

// Projector is the contract of an order projector. It is not safe for
// concurrent use: a projector replica consumes one stream.
type Projector interface {
	// Apply applies e if the projector judges it newer than what it holds
	// for e's order. Duplicates and stale events must leave the state as it
	// was.
	Apply(e Event) Decision
	// Orders returns the state of every order seen, sorted by order id.
	Orders() []OrderState
}

// Failer is implemented by projectors that can fail outside the contract: a
// projector served by another process, which may hang, die or answer
// garbage. The harness asks Err after every call; a non-nil error ends the
// run as an error of the harness (the run could not be played), never as a
// broken law.
type Failer interface {
	Err() error
}
