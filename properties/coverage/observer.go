package coverage

import "github.com/idemcheck/idemcheck/faults/runner"

// Observer counts the situations reached over many runs played one after
// another. Pass it to each run as a runner.Observer and call End with each
// outcome:
//
//	obs := coverage.NewObserver()
//	out, err := runner.Run(s, target, obs)
//	obs.End(out)
//	...
//	counts := obs.Counts()
//
// A consumption run whose End was not called is counted when the next run's
// first action arrives, or by Counts. An Observer is not safe for
// concurrent use: give each goroutine or worker process its own and Merge
// their Counts.
type Observer struct {
	cur    *Tracker
	open   bool // cur follows a run not yet counted
	counts Counts
}

// NewObserver returns an observer with nothing counted.
func NewObserver() *Observer { return &Observer{cur: NewTracker()} }

// BeforeStep implements runner.Observer.
func (o *Observer) BeforeStep(v *runner.View, worker string) { o.cur.BeforeStep(v, worker) }

// After implements runner.Observer. The first action of a run (Seq 0)
// closes the previous run if End was not called for it.
func (o *Observer) After(v *runner.View, a *runner.Action) {
	if a.Seq == 0 {
		o.flush()
	}
	o.open = true
	o.cur.After(v, a)
}

// End closes the run that produced out (of either kind) and counts it; a
// nil out (the runner failed) discards the run.
func (o *Observer) End(out *runner.Outcome) {
	if out == nil {
		o.open = false
		o.cur.reset()
		return
	}
	o.cur.Finish(out)
	o.open = true
	o.flush()
}

func (o *Observer) flush() {
	if o.open && o.cur.kind != "" {
		o.counts.AddRun(o.cur.kind, o.cur.set)
	}
	o.open = false
	o.cur.reset()
}

// Counts returns the counts so far, the run in progress included.
func (o *Observer) Counts() Counts {
	var c Counts
	c.Merge(o.counts)
	if o.open && o.cur.kind != "" {
		c.AddRun(o.cur.kind, o.cur.set)
	}
	return c
}

// Reset forgets everything counted.
func (o *Observer) Reset() {
	o.counts = Counts{}
	o.open = false
	o.cur.reset()
}
