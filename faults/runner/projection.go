package runner

import (
	"fmt"
	"io"
	"strings"

	"github.com/idemcheck/idemcheck/faults/scenario"
	"github.com/idemcheck/idemcheck/impl/contract/clock"
	"github.com/idemcheck/idemcheck/impl/contract/hlc"
	"github.com/idemcheck/idemcheck/impl/contract/projector"
	"github.com/idemcheck/idemcheck/impl/contract/sequencer"
	"github.com/idemcheck/idemcheck/impl/system"
)

// ProjectionResult is what a projection run observed: every HLC reading, the
// emitted events, who knew what when (History), and what each projector of
// each replica ended with. What each order should end as is the model's to
// say (package properties), not the runner's.
type ProjectionResult struct {
	// Readings are every HLC operation, in the order they happened.
	Readings []HLCReading `json:"readings"`
	// Events are the emitted events, in true-time (emission) order.
	Events []EmittedEvent `json:"events"`
	// History is every emit and receive, in order: the causal history.
	History []Happening `json:"history"`
	// Replicas are the projector replicas' runs, in scenario order.
	Replicas []ReplicaRun `json:"replicas"`
	// Declarations are what each node's clock declares (hlc.Declarer), by
	// node; absent for a clock that declares nothing.
	Declarations map[string]hlc.Declaration `json:"declarations,omitempty"`
	// Skipped are the scenario's events that were never emitted, because
	// their node never accepted the event they answer (its HLC refused it),
	// in scenario order.
	Skipped []string `json:"skipped,omitempty"`
}

// Happening is one step of the causal history: Node emitted the event
// named Emit, or received the event named Receive (exactly one is set).
type Happening struct {
	Node    string `json:"node"`
	Emit    string `json:"emit,omitempty"`
	Receive string `json:"receive,omitempty"`
}

// HLCOp is what a node asked its HLC for.
type HLCOp string

// The HLC operations: a burst is many ticks within one instant, recorded
// as one reading.
const (
	OpTick  HLCOp = "tick"
	OpMerge HLCOp = "merge"
	OpBurst HLCOp = "burst"
)

// HLCReading is one HLC operation as the runner saw it from outside the
// clock: the inputs it gave and the stamp it got back.
type HLCReading struct {
	// Step is the index of the scenario step that asked for it.
	Step int    `json:"step"`
	Node string `json:"node"`
	Op   HLCOp  `json:"op"`
	// Event is the event stamped (tick) or received (merge).
	Event string `json:"event"`
	// PhysMs is the node's wall-clock reading at the time.
	PhysMs int64 `json:"physMs"`
	// WallChangeMs is how far the node's wall clock was moved (skew changes
	// and steps) since its previous reading; negative is backwards.
	WallChangeMs int64 `json:"wallChangeMs"`
	// HasPrev says whether the node had a previous reading, Prev.
	HasPrev bool          `json:"hasPrev"`
	Prev    hlc.Timestamp `json:"prev,omitzero"`
	// Remote is the stamp received (merge only).
	Remote hlc.Timestamp `json:"remote,omitzero"`
	// Got is what the clock returned (nothing when it refused); for a
	// burst, its last stamp.
	Got hlc.Timestamp `json:"got"`
	// Ticks are a burst's stamps (OpBurst), in order, as runs (StampRun):
	// Prev is the node's stamp before the burst, and WallChangeMs applies
	// to its first tick.
	Ticks []StampRun `json:"ticks,omitempty"`
	// Refused says the clock refused the remote stamp (merge only), with
	// the error it gave.
	Refused bool   `json:"refused,omitempty"`
	Error   string `json:"error,omitempty"`
}

// EmittedEvent is an event as the producer emitted it, with where it sits in
// the true history.
type EmittedEvent struct {
	Event projector.Event `json:"event"`
	Node  string          `json:"node"`
	// Step is the index of the scenario step that emitted it.
	Step int `json:"step"`
	// TrueMs is the true time of emission.
	TrueMs int64 `json:"trueMs"`
	// Prev is its predecessor in its order ("" for OrderCreated).
	Prev string `json:"prev,omitempty"`
}

// ReplicaRun is one replica: every projector over the same deliveries.
type ReplicaRun struct {
	Name       string         `json:"name"`
	Projectors []ProjectorRun `json:"projectors"`
}

// ProjectorRun is one projector's run on one replica.
type ProjectorRun struct {
	Name string `json:"name"`
	// Claimed is true for the target's projectors, which the invariants
	// judge, and false for baselines, which are only reported.
	Claimed bool `json:"claimed"`
	Applied int  `json:"applied"`
	Dropped int  `json:"dropped"`
	// Final is the projector's state at the end, sorted by order id.
	Final []projector.OrderState `json:"final"`
}

// Statuses returns the final status of each order, in the model's terms.
func (r ProjectorRun) Statuses() map[string]string {
	out := make(map[string]string, len(r.Final))
	for _, st := range r.Final {
		out[st.OrderID] = string(st.Status)
	}
	return out
}

// RunProjection plays a projection scenario against target. Run delegates
// to it for projection scenarios.
func RunProjection(s *scenario.Scenario, t system.Target) (*Outcome, error) {
	if s.Kind != scenario.KindProjection || s.Projection == nil {
		return nil, fmt.Errorf("runner: scenario kind %q is not %q", s.Kind, scenario.KindProjection)
	}
	if t.Projection == nil {
		return nil, fmt.Errorf("runner: target %q has no projection parts", t.Name)
	}
	if err := s.Validate(); err != nil {
		return nil, fmt.Errorf("runner: invalid scenario: %w", err)
	}
	// The trace's lists come from a released run's, or are new ones.
	buf := newRunBuffers(len(s.Projection.Steps))
	out := &Outcome{Scenario: s, Target: t.Name, Trace: &Trace{entries: buf.entries, deliveries: buf.deliveries, hist: buf.hist, buf: buf}}
	res, err := runProjection(s.Projection, t.Projection, out.Trace)
	if err != nil {
		return nil, err
	}
	out.Projection = res
	return out, nil
}

// projWorld is one projection run in progress.
type projWorld struct {
	trace  *Trace
	truth  *clock.Virtual
	walls  map[string]*clock.Node
	clocks map[string]hlc.Clock
	seq    sequencer.Sequencer
	last   map[string]hlc.Timestamp // each node's previous HLC reading
	offset map[string]int64         // each node's wall offset at that reading
	latest map[string]string        // each order's latest event
	byID   map[string]int           // event id -> index in res.Events
	res    *ProjectionResult
	// failed is the first failure of a part outside its contract (a clock
	// or projector in another process that hung, died or answered
	// garbage): it ends the run with an error.
	failed error
	refusals
}

// runProjection plays p with parts on this goroutine: the causal history
// first, then every replica's deliveries through every projector. It appends
// the human account to trace.
func runProjection(p *scenario.Projection, parts *system.Projection, trace *Trace) (*ProjectionResult, error) {
	if parts == nil || (parts.NewHLC == nil && parts.OpenHLC == nil) || parts.NewSequencer == nil {
		return nil, fmt.Errorf("runner: projection parts need NewHLC (or OpenHLC) and NewSequencer")
	}
	trace.proj = &ProjectionResult{}
	w := &projWorld{
		trace: trace, truth: clock.NewVirtual(StartMs),
		walls: map[string]*clock.Node{}, clocks: map[string]hlc.Clock{}, seq: parts.NewSequencer(),
		last: map[string]hlc.Timestamp{}, offset: map[string]int64{}, latest: map[string]string{}, byID: map[string]int{},
		res: trace.proj, refusals: newRefusals(p.OnRefusal),
	}
	defer w.closeClocks()
	w.hist(histLine{kind: histStart, a: int64(len(p.Nodes)), b: int64(len(p.Steps)), c: int64(len(p.Replicas))})
	for _, n := range p.Nodes {
		w.walls[n.Name] = clock.NewNode(n.Name, w.truth, n.SkewMs)
		c, err := openHLC(parts, n.Name, w.walls[n.Name])
		if err != nil {
			return nil, err
		}
		w.clocks[n.Name] = c
		w.offset[n.Name] = n.SkewMs
		w.hist(histLine{kind: histNodeSkew, node: n.Name, a: n.SkewMs})
		if err := w.declare(n.Name); err != nil {
			return nil, err
		}
	}
	for i, st := range p.Steps {
		if err := w.step(i, st); err != nil {
			return nil, fmt.Errorf("runner: projection.steps[%d]: %w", i, err)
		}
		if w.failed != nil {
			return nil, fmt.Errorf("runner: projection.steps[%d]: %w", i, w.failed)
		}
	}
	w.retryAll(len(p.Steps))
	if w.failed != nil {
		return nil, fmt.Errorf("runner: retrying refused messages: %w", w.failed)
	}
	if err := w.deliver(p.Replicas, parts); err != nil {
		return nil, err
	}
	return w.res, nil
}

// logf appends a line to the trace, formatted only if somebody reads it.
func (w *projWorld) logf(format string, args ...any) {
	w.trace.Addf("t=+%dms "+format, append([]any{w.truth.NowMs() - StartMs}, args...)...)
}

func (w *projWorld) step(i int, st scenario.ProjectionStep) error {
	if st.Op == scenario.OpEmit || st.Op == scenario.OpReceive || st.Op == scenario.OpBurst {
		w.retry(i, st.Node)
	}
	switch st.Op {
	case scenario.OpBurst:
		return w.burst(i, st)
	case scenario.OpEmit:
		return w.emit(i, st)
	case scenario.OpReceive:
		return w.receive(i, st)
	case scenario.OpAdvance:
		w.truth.Advance(st.Ms)
		w.hist(histLine{kind: histAdvance, step: i + 1, a: st.Ms})
		return nil
	case scenario.OpSkew, scenario.OpClockStep:
		wall, ok := w.walls[st.Node]
		if !ok {
			return fmt.Errorf("node %q is not listed", st.Node)
		}
		if st.Op == scenario.OpSkew {
			wall.SetSkew(st.Ms)
			w.hist(histLine{kind: histSkew, step: i + 1, node: st.Node, a: st.Ms, b: wall.NowMs() - StartMs})
		} else {
			wall.Step(st.Ms)
			w.hist(histLine{kind: histClockStep, step: i + 1, node: st.Node, a: st.Ms, b: wall.NowMs() - StartMs})
		}
		return nil
	}
	return fmt.Errorf("op %q is not a projection step", st.Op)
}

// reading records one HLC operation, judged later by the hlc-laws property
// from what went in and what came out.
// A refused merge is recorded but leaves the node's previous reading as it
// was: the clock returned nothing and must be unchanged.
func (w *projWorld) reading(i int, node string, op HLCOp, event string, remote hlc.Timestamp, ask func() (hlc.Timestamp, error)) HLCReading {
	wall := w.walls[node]
	prev, hasPrev := w.last[node]
	r := HLCReading{
		Step: i, Node: node, Op: op, Event: event, PhysMs: wall.NowMs(),
		WallChangeMs: wall.SkewMs() - w.offset[node], HasPrev: hasPrev, Prev: prev, Remote: remote,
	}
	got, err := ask()
	if w.clockFailed(node) {
		return r
	}
	if err != nil {
		r.Refused, r.Error = true, err.Error()
	} else {
		r.Got = got
		w.last[node], w.offset[node] = r.Got, wall.SkewMs()
	}
	w.res.Readings = append(w.res.Readings, r)
	return r
}

// clockFailed reports whether node's clock has failed outside its contract
// (hlc.Failer), keeping the first such failure for the run's error.
func (w *projWorld) clockFailed(node string) bool {
	if w.failed != nil {
		return true
	}
	if f, ok := w.clocks[node].(hlc.Failer); ok {
		if err := f.Err(); err != nil {
			w.failed = fmt.Errorf("the HLC of node %s failed: %w", node, err)
			return true
		}
	}
	return false
}

// projectorFailed is clockFailed for a projector.
func projectorFailed(p projector.Projector, replica, name string) error {
	if f, ok := p.(projector.Failer); ok {
		if err := f.Err(); err != nil {
			return fmt.Errorf("runner: replica %s projector %s failed: %w", replica, name, err)
		}
	}
	return nil
}

// closeClocks closes the clocks that hold resources (io.Closer), such as a
// clock served by another process.
func (w *projWorld) closeClocks() {
	for _, c := range w.clocks {
		closeQuietly(c)
	}
}

// closeQuietly closes v if it is an io.Closer. A failure to close is not the
// run's: a part that failed outside its contract said so through Err.
func closeQuietly(v any) {
	if c, ok := v.(io.Closer); ok {
		_ = c.Close()
	}
}

func tick(c hlc.Clock) func() (hlc.Timestamp, error) {
	return func() (hlc.Timestamp, error) { return c.Tick(), nil }
}

func (w *projWorld) emit(i int, st scenario.ProjectionStep) error {
	c, ok := w.clocks[st.Node]
	if !ok {
		return fmt.Errorf("node %q is not listed", st.Node)
	}
	if why := w.unanswerable(st); why != "" {
		w.skip(st.ID)
		w.logf("step %d: %s does not emit %s %s %s: %s", i+1, st.Node, st.ID, st.Kind, st.Order, why)
		return nil
	}
	occurred := w.walls[st.Node].NowMs()
	r := w.reading(i, st.Node, OpTick, st.ID, hlc.Timestamp{}, tick(c))
	ev := EmittedEvent{
		Event: projector.Event{
			ID: st.ID, OrderID: st.Order, Kind: projector.Kind(st.Kind),
			OccurredAtMs: occurred, Seq: w.seq.Write(st.ID), HLC: r.Got,
		},
		Node: st.Node, Step: i, TrueMs: w.truth.NowMs(), Prev: w.latest[st.Order],
	}
	w.latest[st.Order] = st.ID
	w.know(st.Node, st.ID)
	w.byID[st.ID] = len(w.res.Events)
	w.res.Events = append(w.res.Events, ev)
	w.res.History = append(w.res.History, Happening{Node: st.Node, Emit: st.ID})
	w.hist(histLine{kind: histEmit, step: i + 1, index: len(w.res.Events) - 1})
	return nil
}

func (w *projWorld) receive(i int, st scenario.ProjectionStep) error {
	c, ok := w.clocks[st.Node]
	if !ok {
		return fmt.Errorf("node %q is not listed", st.Node)
	}
	if w.isSkipped(st.Event) {
		w.logf("step %d: %s cannot receive %s: it was never emitted", i+1, st.Node, st.Event)
		return nil
	}
	idx, ok := w.byID[st.Event]
	if !ok {
		return fmt.Errorf("event %q has not been emitted", st.Event)
	}
	w.offer(i, st.Node, st.Event, c, w.res.Events[idx].Event.HLC, "")
	return nil
}

// offer hands a received message to the node's HLC: merged, the node knows
// the event; refused, it is dropped or kept for a retry as the scenario
// says. again is "" on first receipt, or how the retry is described.
func (w *projWorld) offer(i int, node, event string, c hlc.Clock, remote hlc.Timestamp, again string) bool {
	r := w.reading(i, node, OpMerge, event, remote, func() (hlc.Timestamp, error) { return c.Merge(remote) })
	if w.failed != nil {
		return false // the run ends with the clock's failure
	}
	if r.Refused {
		fate := w.refused(node, event, again)
		w.hist(histLine{kind: histReceive, step: i + 1, again: again, fate: fate, index: len(w.res.Readings) - 1})
		return false
	}
	w.know(node, event)
	w.res.History = append(w.res.History, Happening{Node: node, Receive: event})
	w.hist(histLine{kind: histReceive, step: i + 1, again: again, index: len(w.res.Readings) - 1})
	return true
}

func projPrev(r HLCReading) string {
	if !r.HasPrev {
		return "(none)"
	}
	return r.Prev.String()
}

// deliver runs every projector of every replica over the replica's
// deliveries and records the final states.
func (w *projWorld) deliver(replicas []scenario.Replica, parts *system.Projection) error {
	type named struct {
		system.NamedProjector
		claimed bool
	}
	var all []named
	seen := map[string]bool{}
	for _, np := range parts.Projectors {
		all = append(all, named{np, true})
	}
	for _, np := range parts.Baselines {
		all = append(all, named{np, false})
	}
	for _, np := range all {
		if np.Name == "" || np.New == nil || seen[np.Name] {
			return fmt.Errorf("runner: projector %q is unnamed, repeated or has no constructor", np.Name)
		}
		seen[np.Name] = true
	}
	at := w.truth.NowMs() - StartMs // true time stands still while replicas catch up
	var events []int
	for _, rep := range replicas {
		// Each delivery's event, found once for all the projectors (-1:
		// never emitted, nothing to deliver).
		events = events[:0]
		for _, id := range rep.Deliveries {
			idx, ok := w.byID[id]
			switch {
			case w.isSkipped(id):
				idx = -1
			case !ok:
				return fmt.Errorf("runner: replica %s delivers %q, which was never emitted", rep.Name, id)
			}
			events = append(events, idx)
		}
		rr := ReplicaRun{Name: rep.Name}
		for _, np := range all {
			run := ProjectorRun{Name: np.Name, Claimed: np.claimed}
			p := np.New()
			if err := projectorFailed(p, rep.Name, np.Name); err != nil {
				closeQuietly(p)
				return err
			}
			for k, idx := range events {
				if idx < 0 {
					w.logf("replica %s %s delivery %d/%d: %s was never emitted, nothing to deliver", rep.Name, np.Name, k+1, len(rep.Deliveries), rep.Deliveries[k])
					continue
				}
				d := p.Apply(w.res.Events[idx].Event)
				if err := projectorFailed(p, rep.Name, np.Name); err != nil {
					closeQuietly(p)
					return err
				}
				if d.Applied {
					run.Applied++
				} else {
					run.Dropped++
				}
				w.trace.deliver(delivery{atMs: at, replica: rep.Name, projector: np.Name, k: k + 1, of: len(rep.Deliveries),
					event: idx, applied: d.Applied, reason: d.Reason})
			}
			run.Final = p.Orders()
			err := projectorFailed(p, rep.Name, np.Name)
			closeQuietly(p)
			if err != nil {
				return err
			}
			rr.Projectors = append(rr.Projectors, run)
		}
		w.res.Replicas = append(w.res.Replicas, rr)
		w.hist(histLine{kind: histReplica, index: len(w.res.Replicas) - 1})
	}
	return nil
}

// replicaFinal renders a replica's final states for the trace, only when
// the line is read.
type replicaFinal ReplicaRun

func (r replicaFinal) String() string {
	finals := make([]string, len(r.Projectors))
	for i, run := range r.Projectors {
		var parts []string
		for _, st := range run.Final {
			parts = append(parts, fmt.Sprintf("%s=%s", st.OrderID, st.Status))
		}
		label := run.Name
		if !run.Claimed {
			label += " (baseline)"
		}
		finals[i] = label + " " + strings.Join(parts, ",")
	}
	return strings.Join(finals, "; ")
}
