// Package order is the specification of an order's lifecycle as the
// projectors must see it: the status machine, and the causally correct final
// status of each order given the true causal history of its events.
//
// It is pure: no I/O, no clocks, no randomness. The projection properties
// compare every projector against it.
package order

import (
	"fmt"
	"slices"
)

// Kind names an order lifecycle event.
type Kind string

// The lifecycle events an order service emits.
const (
	Created   Kind = "OrderCreated"
	Paid      Kind = "OrderPaid"
	Cancelled Kind = "OrderCancelled"
)

// Status is an order's state as a projection shows it.
type Status string

// The statuses an order moves through. None is an order no event has touched.
const (
	None            Status = ""
	StatusCreated   Status = "created"
	StatusPaid      Status = "paid"
	StatusCancelled Status = "cancelled"
)

// Next is the status machine: the status after event k happens to an order in
// status s. An order is created once, may be paid, and may be cancelled (also
// after payment, as a refund); nothing happens to a cancelled order. Anything
// else is an error, because a service that emitted it would be broken and
// "the correct final state" would mean nothing.
func Next(s Status, k Kind) (Status, error) {
	switch {
	case s == None && k == Created:
		return StatusCreated, nil
	case s == StatusCreated && k == Paid:
		return StatusPaid, nil
	case (s == StatusCreated || s == StatusPaid) && k == Cancelled:
		return StatusCancelled, nil
	}
	from := string(s)
	if s == None {
		from = "no order"
	}
	return None, fmt.Errorf("%s cannot follow %s", k, from)
}

// Event is one emitted event as the causal history records it.
type Event struct {
	ID      string
	OrderID string
	Kind    Kind
	// Prev is the ID of the event of the same order that the emitter had
	// emitted or received last when it emitted this one: its causal
	// predecessor. Empty for the event that starts an order.
	Prev string
}

// FinalStatus returns the causally correct final status of every order in
// history. The answer does not depend on the order of history: for each order
// it follows the Prev links from the event that started it, so the result is
// what the order's causal chain says, not what any clock says.
//
// It is an error if an order's events do not form one chain (no start, two
// starts, a fork where two events follow the same one, an event that is not
// reachable, a dangling Prev) or if the chain breaks the status machine: then
// no final state is "correct".
func FinalStatus(history []Event) (map[string]Status, error) {
	byID := map[string]Event{}
	var orders []string
	perOrder := map[string][]Event{}
	for _, e := range history {
		if e.ID == "" {
			return nil, fmt.Errorf("event of order %q has no id", e.OrderID)
		}
		if _, dup := byID[e.ID]; dup {
			return nil, fmt.Errorf("event %s appears twice in the history", e.ID)
		}
		byID[e.ID] = e
		if _, seen := perOrder[e.OrderID]; !seen {
			orders = append(orders, e.OrderID)
		}
		perOrder[e.OrderID] = append(perOrder[e.OrderID], e)
	}
	slices.Sort(orders)

	out := map[string]Status{}
	for _, o := range orders {
		st, err := chainStatus(o, perOrder[o], byID)
		if err != nil {
			return nil, err
		}
		out[o] = st
	}
	return out, nil
}

// chainStatus walks one order's chain from its start and folds the status
// machine over it.
func chainStatus(orderID string, events []Event, byID map[string]Event) (Status, error) {
	var start string
	next := map[string]string{}
	for _, e := range events {
		if e.Prev == "" {
			if start != "" {
				return None, fmt.Errorf("order %s: both %s and %s start it", orderID, start, e.ID)
			}
			start = e.ID
			continue
		}
		p, ok := byID[e.Prev]
		if !ok || p.OrderID != orderID {
			return None, fmt.Errorf("order %s: %s follows %s, which is not an event of this order", orderID, e.ID, e.Prev)
		}
		if other, fork := next[e.Prev]; fork {
			return None, fmt.Errorf("order %s: %s and %s both follow %s (concurrent updates)", orderID, other, e.ID, e.Prev)
		}
		next[e.Prev] = e.ID
	}
	if start == "" {
		return None, fmt.Errorf("order %s: no event starts it", orderID)
	}
	st, walked := None, 0
	for id := start; id != ""; id = next[id] {
		var err error
		if st, err = Next(st, byID[id].Kind); err != nil {
			return None, fmt.Errorf("order %s: %s: %w", orderID, id, err)
		}
		walked++
	}
	if walked != len(events) {
		return None, fmt.Errorf("order %s: %d of its %d events are not on the chain from %s", orderID, len(events)-walked, len(events), start)
	}
	return st, nil
}
