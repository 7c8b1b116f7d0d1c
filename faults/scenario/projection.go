package scenario

import (
	"fmt"
)

// Projection is a scenario over skewed nodes, their hybrid logical clocks,
// the outbox sequencer and the order projectors (invariants 7–9).
//
// It has two parts. Steps are the true causal history, played in order on
// one true clock: nodes emit order events (each stamped by the node's HLC
// tick and given a seq by the outbox writer), receive each other's events
// (an HLC merge), and have their wall clocks skewed or stepped while true
// time advances. Replicas then each consume every emitted event, in their own
// delivery order and with duplicates, through every projector under test.
//
// The events of one order form a causal chain: a node emits the next event
// of an order only after it emitted or received the order's latest event, as
// a real service would. That makes the causally correct final state of every
// order well defined, and validate enforces it.
type Projection struct {
	// Nodes are the producing services, each with its initial wall-clock skew.
	Nodes []Node `json:"nodes"`
	// Steps is the causal history.
	Steps []ProjectionStep `json:"steps"`
	// Replicas are the projector replicas and what each is delivered.
	Replicas []Replica `json:"replicas"`
	// OnRefusal says what a node does with a message whose stamp its HLC
	// refused: drop it (the default) or retry it later.
	OnRefusal Refusal `json:"onRefusal,omitempty"`
}

// The projection steps besides OpAdvance ("advance": true time moves forward
// by Ms), OpSkew ("skew": Node's wall clock is set Ms away from true time)
// and OpClockStep ("clock-step": Node's wall clock jumps by Ms, negative is
// backwards).
const (
	// OpEmit: Node emits event ID of kind Kind for order Order.
	OpEmit Op = "emit"
	// OpReceive: Node receives the emitted event Event from another node.
	OpReceive Op = "receive"
)

// EventKind is an order lifecycle event.
type EventKind string

// The order lifecycle events. An order is created once, may be paid, and may
// be cancelled (also after payment); nothing follows a cancellation.
const (
	EventOrderCreated   EventKind = "OrderCreated"
	EventOrderPaid      EventKind = "OrderPaid"
	EventOrderCancelled EventKind = "OrderCancelled"
)

// ProjectionStep is one step of the causal history. Only the fields its Op
// names are read.
type ProjectionStep struct {
	Op   Op     `json:"op"`
	Node string `json:"node,omitempty"`
	// ID is the emitted event's id (emit).
	ID string `json:"id,omitempty"`
	// Order is the emitted event's order id (emit).
	Order string `json:"order,omitempty"`
	// Kind is the emitted event's kind (emit).
	Kind EventKind `json:"kind,omitempty"`
	// Event is the id of the event received (receive).
	Event string `json:"event,omitempty"`
	// Ms is the amount of an advance, a skew or a clock step.
	Ms int64 `json:"ms,omitempty"`
	// Count is the number of ticks of a burst.
	Count int `json:"count,omitempty"`
}

// Replica is one projector replica: every projector under test consumes
// Deliveries, in this order.
type Replica struct {
	Name string `json:"name"`
	// Deliveries are event ids in delivery order: every emitted event at
	// least once and at most MaxCopies times, nothing else.
	Deliveries []string `json:"deliveries"`
}

// MaxCopies is the most times one event may be delivered to one replica.
const MaxCopies = 10

// projectionOrder is what validation tracks of one order.
type projectionOrder struct {
	latest string
	kind   EventKind
}

func (p *Projection) validate() error {
	if len(p.Nodes) == 0 {
		return fmt.Errorf("projection.nodes: need at least one")
	}
	if err := p.OnRefusal.validate(); err != nil {
		return err
	}
	nodes := map[string]bool{}
	for i, n := range p.Nodes {
		if n.Name == "" || nodes[n.Name] {
			return fmt.Errorf("projection.nodes[%d].name: %q is empty or repeated", i, n.Name)
		}
		nodes[n.Name] = true
	}
	emitter := map[string]string{} // event id -> node that emitted it
	knows := map[nodeEvent]bool{}  // emitted or received
	orders := map[string]*projectionOrder{}
	var emitted []string
	for i, st := range p.Steps {
		if err := p.validateStep(st, nodes, emitter, knows, orders); err != nil {
			return fmt.Errorf("projection.steps[%d].%w", i, err)
		}
		if st.Op == OpEmit {
			emitted = append(emitted, st.ID)
		}
	}
	if len(p.Replicas) == 0 {
		return fmt.Errorf("projection.replicas: need at least one")
	}
	names := map[string]bool{}
	for i, r := range p.Replicas {
		if r.Name == "" || names[r.Name] {
			return fmt.Errorf("projection.replicas[%d].name: %q is empty or repeated", i, r.Name)
		}
		names[r.Name] = true
		copies := map[string]int{}
		for j, id := range r.Deliveries {
			if _, ok := emitter[id]; !ok {
				return fmt.Errorf("projection.replicas[%d].deliveries[%d]: %q is not an emitted event", i, j, id)
			}
			copies[id]++
			if copies[id] > MaxCopies {
				return fmt.Errorf("projection.replicas[%d].deliveries[%d]: %q is delivered more than %d times", i, j, id, MaxCopies)
			}
		}
		for _, id := range emitted {
			if copies[id] == 0 {
				return fmt.Errorf("projection.replicas[%d].deliveries: %q is never delivered; every replica must see every event", i, id)
			}
		}
	}
	return nil
}

// nodeEvent is an event as known to a node.
type nodeEvent struct{ node, event string }

// validateStep checks one step against the history so far and records its
// effect. Its errors start with the field name, for validate to prefix.
func (p *Projection) validateStep(st ProjectionStep, nodes map[string]bool, emitter map[string]string, knows map[nodeEvent]bool, orders map[string]*projectionOrder) error {
	switch st.Op {
	case OpEmit, OpReceive, OpSkew, OpClockStep, OpBurst:
		if !nodes[st.Node] {
			return fmt.Errorf("node: %q is not a listed node", st.Node)
		}
	case OpAdvance:
	default:
		return fmt.Errorf("op: %q is not one of %q, %q, %q, %q, %q, %q", st.Op, OpEmit, OpReceive, OpAdvance, OpSkew, OpClockStep, OpBurst)
	}
	switch st.Op {
	case OpBurst:
		return validateBurst(st)
	case OpEmit:
		return validateEmit(st, emitter, knows, orders)
	case OpReceive:
		from, ok := emitter[st.Event]
		switch {
		case !ok:
			return fmt.Errorf("event: %q has not been emitted by an earlier step", st.Event)
		case from == st.Node:
			return fmt.Errorf("event: node %s cannot receive %q, its own event", st.Node, st.Event)
		}
		knows[nodeEvent{st.Node, st.Event}] = true
	case OpAdvance:
		if st.Node != "" {
			return fmt.Errorf("node: %q given, but true time is not a node's", st.Node)
		}
		if st.Ms < 0 {
			return fmt.Errorf("ms: %d is negative; true time only moves forward", st.Ms)
		}
	}
	return nil
}

// validateEmit enforces unique ids, the order lifecycle and the causal chain.
func validateEmit(st ProjectionStep, emitter map[string]string, knows map[nodeEvent]bool, orders map[string]*projectionOrder) error {
	switch {
	case st.ID == "":
		return fmt.Errorf("id: empty")
	case emitter[st.ID] != "":
		return fmt.Errorf("id: %q is already emitted", st.ID)
	case st.Order == "":
		return fmt.Errorf("order: empty")
	}
	o := orders[st.Order]
	if o == nil {
		if st.Kind != EventOrderCreated {
			return fmt.Errorf("kind: order %q starts with %q; it must start with %q", st.Order, st.Kind, EventOrderCreated)
		}
		o = &projectionOrder{}
		orders[st.Order] = o
	} else {
		if !canFollow(o.kind, st.Kind) {
			return fmt.Errorf("kind: %q cannot follow %q in order %q", st.Kind, o.kind, st.Order)
		}
		if !knows[nodeEvent{st.Node, o.latest}] {
			return fmt.Errorf("node: %s emits for order %q without having emitted or received its latest event %q (the causal chain would fork)", st.Node, st.Order, o.latest)
		}
	}
	o.latest, o.kind = st.ID, st.Kind
	emitter[st.ID] = st.Node
	knows[nodeEvent{st.Node, st.ID}] = true
	return nil
}

// canFollow is the order lifecycle: what may come after the latest event.
func canFollow(latest, next EventKind) bool {
	switch latest {
	case EventOrderCreated:
		return next == EventOrderPaid || next == EventOrderCancelled
	case EventOrderPaid:
		return next == EventOrderCancelled
	}
	return false
}

// size is the number of steps plus the number of deliveries.
func (p *Projection) size() int {
	n := len(p.Steps)
	for _, r := range p.Replicas {
		n += len(r.Deliveries)
	}
	return n
}
