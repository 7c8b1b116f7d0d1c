package runner

import "fmt"

// histKind is the kind of a projection history line.
type histKind uint8

const (
	histStart     histKind = iota // a, b, c: nodes, steps, replicas
	histNodeSkew                  // node, a: its skew
	histAdvance                   // a: how far true time moved
	histSkew                      // node, a: the new skew, b: its wall clock
	histClockStep                 // node, a: the step, b: its wall clock
	histEmit                      // index: the event in Events
	histReceive                   // index: the reading in Readings; again; fate if refused
	histBurst                     // index: the reading in Readings
	histReplica                   // index: the replica in Replicas
)

// histLine is a line of a projection run's trace kept as data, with the
// run's result it points into, and formatted only when read: most runs
// pass, and nobody reads their traces.
type histLine struct {
	kind        histKind
	atMs        int64 // true time, relative to the start
	step        int   // the step, from 1
	node        string
	again, fate string
	a, b, c     int64
	index       int
}

// hist appends a projection history line at the run's true time.
func (w *projWorld) hist(l histLine) {
	l.atMs = w.truth.NowMs() - StartMs
	t := w.trace
	t.entries = append(t.entries, traceEntry{action: len(t.hist), histLine: true})
	t.hist = append(t.hist, l)
}

func (t *Trace) describeHist(l histLine) string {
	res := t.proj
	var body string
	switch l.kind {
	case histStart:
		body = fmt.Sprintf("start: %d node(s), %d step(s), %d replica(s); t=0 is true time %dms, stamps and occurredAt are absolute ms", l.a, l.b, l.c, StartMs)
	case histNodeSkew:
		body = fmt.Sprintf("node %s wall clock runs %+dms off true time", l.node, l.a)
	case histAdvance:
		body = fmt.Sprintf("step %d: true time advances %dms", l.step, l.a)
	case histSkew:
		body = fmt.Sprintf("step %d: node %s clock skewed to %+dms (wall reads t=%+dms)", l.step, l.node, l.a, l.b)
	case histClockStep:
		body = fmt.Sprintf("step %d: node %s clock steps %+dms (wall reads t=%+dms)", l.step, l.node, l.a, l.b)
	case histEmit:
		e := res.Events[l.index]
		ev := e.Event
		body = fmt.Sprintf("step %d: %s emits %s %s %s: wall reads t=%+dms, occurredAt %d; hlc tick %s; outbox seq %d",
			l.step, e.Node, ev.ID, ev.Kind, ev.OrderID, ev.OccurredAtMs-StartMs, ev.OccurredAtMs, ev.HLC, ev.Seq)
	case histReceive:
		r := res.Readings[l.index]
		if r.Refused {
			body = fmt.Sprintf("step %d: %s%s receives %s (hlc %s): wall reads t=%+dms; hlc REFUSES it (%s): %s",
				l.step, r.Node, l.again, r.Event, r.Remote, r.PhysMs-StartMs, r.Error, l.fate)
		} else {
			body = fmt.Sprintf("step %d: %s%s receives %s (hlc %s): wall reads t=%+dms; hlc merge with its last %s -> %s",
				l.step, r.Node, l.again, r.Event, r.Remote, r.PhysMs-StartMs, projPrev(r), r.Got)
		}
	case histBurst:
		r := res.Readings[l.index]
		body = fmt.Sprintf("step %d: %s stamps a burst of %d local events within one instant: hlc %s",
			l.step, r.Node, r.Stamps(), describeRuns(r.Prev, r.HasPrev, r.Ticks))
	case histReplica:
		rep := res.Replicas[l.index]
		body = fmt.Sprintf("replica %s ends: %s", rep.Name, replicaFinal(rep))
	}
	return fmt.Sprintf("t=+%dms %s", l.atMs, body)
}
