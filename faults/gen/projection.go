package gen

import (
	"fmt"

	"github.com/idemcheck/idemcheck/faults/scenario"
	"pgregory.net/rapid"
)

// Bounds of generated projection scenarios. Skews and steps are minutes
// either way, as between real services; true time moves in small amounts
// between steps, so that skew, not elapsed time, decides what producer
// timestamps say.
const (
	projMaxSkewMin   = 10
	projMaxAdvanceMs = 60_000
	projMaxActions   = 24
	projMaxExtra     = scenario.MaxCopies - 1
)

// projMinutes draws whole minutes in [lo, hi] plus up to a minute of
// milliseconds: drawn in minutes because rapid favours small numbers and a
// skew of a few milliseconds would hide the bugs that skew of minutes shows.
func projMinutes(t *rapid.T, label string, lo, hi int64) int64 {
	g := projSkewMinutes
	if lo == -projMaxSkewMin && hi == 0 {
		g = projStepMinutes
	} else if lo != -projMaxSkewMin || hi != projMaxSkewMin {
		g = rapid.Int64Range(lo, hi)
	}
	return g.Draw(t, label+"Min")*60_000 + projMillis.Draw(t, label+"Ms")
}

// The generators every projection scenario draws with, made once (see
// intsTo).
var (
	projSkewMinutes = rapid.Int64Range(-projMaxSkewMin, projMaxSkewMin)
	projStepMinutes = rapid.Int64Range(-projMaxSkewMin, 0)
	projMillis      = rapid.Int64Range(0, 59_999)
	projAdvances    = rapid.Int64Range(0, projMaxAdvanceMs)
	projActKind     = rapid.IntRange(0, projActKinds-1)
	projNode        = rapid.IntRange(0, 2)
	projPick        = rapid.IntRange(0, 7)
	projNodes       = rapid.IntRange(2, 3)
	projExtra       = rapid.IntRange(0, projMaxExtra)
	projActions     = rapid.SliceOfN(projActionGen(), 1, projMaxActions)
	projRetry       = rapid.Bool()
)

// Projection draws a projection scenario: two or three nodes with skews of
// minutes either way, a causal history of emits, replies (a node receives
// another's event and emits the order's next one), receives, true-time
// advances, skews and clock steps (mostly backwards), and two or three
// replicas, each delivered every event in any order with duplicates.
//
// It shrinks well: the history is drawn as a list of independent actions
// that are then read against the history so far, so rapid can delete any of
// them; every number shrinks towards zero, every replica towards one copy of
// each event in emission order. A shrunk failure is a short history
// delivered in order, which is what a person wants to read.
func Projection() *rapid.Generator[*scenario.Scenario] {
	return rapid.Custom(func(t *rapid.T) *scenario.Scenario {
		return &scenario.Scenario{Version: scenario.Version, Kind: scenario.KindProjection, Projection: projDraw(t)}
	})
}

// The kinds of raw action, most basic first: rapid shrinks towards 0.
const (
	projActEmit = iota
	projActReply
	projActReceive
	projActAdvance
	projActStep
	projActSkew
	projActBurst
	projActKinds
)

// projAction is one raw history action before it is read against the
// history; fields an action kind does not use are zero.
type projAction struct {
	kind int
	node int
	pick int
	ms   int64
}

func projActionGen() *rapid.Generator[projAction] {
	return rapid.Custom(func(t *rapid.T) projAction {
		a := projAction{
			kind: projActKind.Draw(t, "act"),
			node: projNode.Draw(t, "node"),
		}
		switch a.kind {
		case projActEmit, projActReply, projActReceive:
			a.pick = projPick.Draw(t, "pick")
		case projActAdvance:
			a.ms = projAdvances.Draw(t, "advanceMs")
		case projActStep:
			// Backwards, or forward by under a minute: a step forward is
			// harmless to an HLC, a step back is the fault worth drawing.
			a.ms = projMinutes(t, "step", -projMaxSkewMin, 0)
		case projActSkew:
			a.ms = projMinutes(t, "skew", -projMaxSkewMin, projMaxSkewMin)
		case projActBurst:
			a.pick = projBurstCount(t)
		}
		return a
	})
}

// projHistory reads raw actions into valid steps, tracking what each node
// has seen so that every emit keeps its order's causal chain.
// The nodes' names and the labels of their skews.
var (
	projNodeNames  = []string{"A", "B", "C"}
	projSkewLabels = []string{"skewA", "skewB", "skewC"}
)

type projHistory struct {
	nodes   []string
	steps   []scenario.ProjectionStep
	events  []string          // event ids in emission order
	emitter map[string]string // event id -> node
	orders  []projOrder
	knows   map[string]map[string]bool // node -> event ids emitted or received
}

type projOrder struct {
	id     string
	latest string
	kind   scenario.EventKind
}

func projDraw(t *rapid.T) *scenario.Projection {
	p := &scenario.Projection{}
	h := &projHistory{emitter: map[string]string{}, knows: map[string]map[string]bool{}}
	for i := range projNodes.Draw(t, "nodes") {
		name := projNodeNames[i]
		h.nodes = append(h.nodes, name)
		h.knows[name] = map[string]bool{}
		p.Nodes = append(p.Nodes, scenario.Node{Name: name, SkewMs: projMinutes(t, projSkewLabels[i], -projMaxSkewMin, projMaxSkewMin)})
	}
	for _, a := range projActions.Draw(t, "actions") {
		h.read(a)
	}
	p.Steps = h.steps
	if projRetry.Draw(t, "retryRefused") {
		p.OnRefusal = scenario.RefusalRetry
	}
	for r := range projNodes.Draw(t, "replicas") {
		var base []string
		for _, e := range h.events {
			for range 1 + projExtra.Draw(t, "extra") {
				base = append(base, e)
			}
		}
		p.Replicas = append(p.Replicas, scenario.Replica{
			Name:       fmt.Sprintf("r%d", r+1),
			Deliveries: rapid.Permutation(base).Draw(t, "deliveries"),
		})
	}
	return p
}

// read turns one raw action into steps: none (a receive with nothing to
// receive), one, or two (a reply is a receive and an emit).
func (h *projHistory) read(a projAction) {
	node := h.nodes[a.node%len(h.nodes)]
	switch a.kind {
	case projActEmit:
		h.emit(node, a.pick)
	case projActReply:
		h.reply(node, a.pick)
	case projActReceive:
		h.receive(node, a.pick)
	case projActAdvance:
		h.steps = append(h.steps, scenario.ProjectionStep{Op: scenario.OpAdvance, Ms: a.ms})
	case projActStep:
		h.steps = append(h.steps, scenario.ProjectionStep{Op: scenario.OpClockStep, Node: node, Ms: a.ms})
	case projActSkew:
		h.steps = append(h.steps, scenario.ProjectionStep{Op: scenario.OpSkew, Node: node, Ms: a.ms})
	case projActBurst:
		h.steps = append(h.steps, scenario.ProjectionStep{Op: scenario.OpBurst, Node: node, Count: a.pick})
	}
}

// emit continues an order whose latest event node knows (pick chooses which,
// and the kind that follows), or starts a new order: a node only updates an
// order it has heard the latest of, as a real service would.
func (h *projHistory) emit(node string, pick int) {
	open := h.open(node)
	choice := pick % (len(open) + 1)
	if choice == len(open) {
		id := fmt.Sprintf("e%d", len(h.events)+1)
		o := projOrder{id: fmt.Sprintf("o%d", len(h.orders)+1), latest: id, kind: scenario.EventOrderCreated}
		h.orders = append(h.orders, o)
		h.record(node, id, o.id, o.kind)
		return
	}
	h.next(node, open[choice], pick/(len(open)+1)%2 == 1)
}

// reply is a service reacting to another's event: node receives the latest
// event of an open order that another node emitted, and emits the order's
// next event. It is the causal chain across nodes that clock skew breaks for
// producer timestamps, so it gets its own action rather than being left to
// a lucky receive followed by a lucky emit. Without such an order it emits.
func (h *projHistory) reply(node string, pick int) {
	var theirs []int
	for i, o := range h.orders {
		if o.kind != scenario.EventOrderCancelled && h.emitter[o.latest] != node {
			theirs = append(theirs, i)
		}
	}
	if len(theirs) == 0 {
		h.emit(node, pick)
		return
	}
	o := theirs[pick%len(theirs)]
	if latest := h.orders[o].latest; !h.knows[node][latest] {
		h.steps = append(h.steps, scenario.ProjectionStep{Op: scenario.OpReceive, Node: node, Event: latest})
		h.knows[node][latest] = true
	}
	h.next(node, o, pick/len(theirs)%2 == 1)
}

// open lists the orders node may continue: not cancelled, latest known.
func (h *projHistory) open(node string) []int {
	var out []int
	for i, o := range h.orders {
		if o.kind != scenario.EventOrderCancelled && h.knows[node][o.latest] {
			out = append(out, i)
		}
	}
	return out
}

// next emits the next event of order o on node: a cancellation, or, after a
// creation and if paid, a payment. Cancel comes first because Created then
// Cancelled is the story of the skew bug, and rapid shrinks towards it.
func (h *projHistory) next(node string, o int, paid bool) {
	kind := scenario.EventOrderCancelled
	if h.orders[o].kind == scenario.EventOrderCreated && paid {
		kind = scenario.EventOrderPaid
	}
	id := fmt.Sprintf("e%d", len(h.events)+1)
	h.orders[o].latest, h.orders[o].kind = id, kind
	h.record(node, id, h.orders[o].id, kind)
}

func (h *projHistory) record(node, id, orderID string, kind scenario.EventKind) {
	h.steps = append(h.steps, scenario.ProjectionStep{Op: scenario.OpEmit, Node: node, ID: id, Order: orderID, Kind: kind})
	h.events = append(h.events, id)
	h.emitter[id] = node
	h.knows[node][id] = true
}

// receive delivers to node one event it has not seen from another node,
// newest first, since replies to recent events are what chains orders
// across nodes; it does nothing if there is none.
func (h *projHistory) receive(node string, pick int) {
	var unseen []string
	for i := len(h.events) - 1; i >= 0; i-- {
		if e := h.events[i]; h.emitter[e] != node && !h.knows[node][e] {
			unseen = append(unseen, e)
		}
	}
	if len(unseen) == 0 {
		return
	}
	id := unseen[pick%len(unseen)]
	h.steps = append(h.steps, scenario.ProjectionStep{Op: scenario.OpReceive, Node: node, Event: id})
	h.knows[node][id] = true
}
