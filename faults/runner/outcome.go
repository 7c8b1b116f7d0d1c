// Package runner plays a Scenario against a Target on one goroutine, step by
// step, and returns what was observed. The same Scenario against the same
// Target always gives the same Outcome, byte for byte. The runner observes
// and records; it never judges: the properties (package properties) do,
// through Observers called after every action and from the final result.
package runner

import (
	"sync"

	"github.com/idemcheck/idemcheck/faults/scenario"
)

// Outcome is everything a run observed: the scenario, the trace, and the
// kind-specific result the properties judge.
type Outcome struct {
	Scenario *scenario.Scenario
	Target   string
	Trace    *Trace
	// Exactly one of these is set, matching the scenario's kind.
	Consumption *ConsumptionResult
	Projection  *ProjectionResult
}

// Release hands o's memory back for a later run to reuse; the caller
// promises that nothing reads o, its result or its trace again. A hunt
// releases the outcome of every check that passed: a consumption run's
// action list runs to tens of kilobytes, which the allocator serves slowly
// and the collector must sweep again, thousands of times a second.
func (o *Outcome) Release() {
	if o == nil {
		return
	}
	var b *runBuffers
	switch {
	case o.Consumption != nil && o.Consumption.buf != nil:
		r := o.Consumption
		b = r.buf
		clear(r.Actions) // no stale pointer keeps a dead run's parts alive
		b.actions, r.Actions, r.buf = r.Actions[:0], nil, nil
	case o.Trace != nil && o.Trace.buf != nil:
		t := o.Trace
		b, t.buf = t.buf, nil
		clear(t.deliveries)
		clear(t.hist)
		b.deliveries, b.hist, t.deliveries, t.hist = t.deliveries[:0], t.hist[:0], nil, nil
	default:
		return
	}
	if o.Trace != nil {
		clear(o.Trace.entries)
		b.entries, o.Trace.entries = o.Trace.entries[:0], nil
	}
	runBufferPool.Put(b)
}

// runBuffers are a run's growing lists, kept from one run to the next by
// Release.
type runBuffers struct {
	actions    []Action
	entries    []traceEntry
	deliveries []delivery
	hist       []histLine
}

var runBufferPool sync.Pool

// newRunBuffers returns released buffers, or new ones sized for a scenario
// of steps steps.
func newRunBuffers(steps int) *runBuffers {
	if b, ok := runBufferPool.Get().(*runBuffers); ok {
		return b
	}
	// A consumption step takes three or four actions, the drain and the
	// replay about as many again; a projection's lines are mostly its
	// deliveries.
	n := 4*steps + 16
	return &runBuffers{entries: make([]traceEntry, 0, n+8)}
}
