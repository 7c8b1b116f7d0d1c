package projector

import "fmt"

// NewDedupOnly returns a broken projector that is idempotent but not
// reorder-safe: it remembers the event ids it applied and applies every event
// it has not seen, in arrival order. It is the bug of treating "exactly-once"
// as "correct": duplicates are harmless, but the last event to arrive wins,
// so replicas that saw the same events in different orders disagree.
func NewDedupOnly() Projector {
	return &dedupOnly{seen: map[string]bool{}, orders: map[string]OrderState{}}
}

type dedupOnly struct {
	seen   map[string]bool
	orders map[string]OrderState
}

// Apply implements Projector, with the bug.
func (d *dedupOnly) Apply(e Event) Decision {
	if d.seen[e.ID] {
		return Decision{Reason: fmt.Sprintf("%s already applied: duplicate", e.ID)}
	}
	d.seen[e.ID] = true
	d.orders[e.OrderID] = OrderState{OrderID: e.OrderID, Status: e.Kind.Status(), Last: e}
	return Decision{Applied: true, Reason: fmt.Sprintf("first delivery of %s", e.ID)}
}

// Orders implements Projector.
func (d *dedupOnly) Orders() []OrderState { return sortedStates(d.orders) }
