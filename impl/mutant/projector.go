package mutant

import (
	"fmt"

	"github.com/idemcheck/idemcheck/impl/contract/projector"
	"github.com/idemcheck/idemcheck/impl/reference/orderprojector"
)

// NewDedupOnlyProjector returns a broken projector that is idempotent but
// not reorder-safe: it remembers the event ids it applied and applies every
// event it has not seen, in arrival order. It is the bug of treating
// "exactly-once" as "correct": duplicates are harmless, but the last event to
// arrive wins, so replicas that saw the same events in different orders
// disagree.
func NewDedupOnlyProjector() projector.Projector {
	return &dedupOnly{seen: map[string]bool{}, orders: map[string]projector.OrderState{}}
}

type dedupOnly struct {
	seen   map[string]bool
	orders map[string]projector.OrderState
}

func (d *dedupOnly) Apply(e projector.Event) projector.Decision {
	if d.seen[e.ID] {
		return projector.Decision{Reason: fmt.Sprintf("%s already applied: duplicate", e.ID)}
	}
	d.seen[e.ID] = true
	d.orders[e.OrderID] = projector.OrderState{OrderID: e.OrderID, Status: e.Kind.Status(), Last: e}
	return projector.Decision{Applied: true, Reason: fmt.Sprintf("first delivery of %s", e.ID)}
}

func (d *dedupOnly) Orders() []projector.OrderState { return orderprojector.SortedStates(d.orders) }
