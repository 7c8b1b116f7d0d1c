// Package explore is the model checker: it enumerates every schedule of a
// small consumption world up to a depth, breadth first, over the Scenario
// vocabulary (package faults/scenario), and judges every state it reaches
// with the properties' own monitors and final checks (package properties).
// A clean exploration proves that no schedule within the bound violates a
// property; a violation is reported as a shortest schedule, an ordinary
// scenario that the corpus stores and every other mode replays.
//
// Visited states are deduplicated by a 64-bit fingerprint of the whole
// system state (runner.Fingerprinter), folded by symmetry (interchangeable
// workers of one group, events alike but for their id); a partial-order
// reduction skips the second order of two pipeline steps of different
// workers on different events, which commute. States are kept as
// fingerprints and a parent link only.
//
// Two engines build the states. The compact engine, the default for the
// reference, searches its restatement as a value-typed state machine
// (package explore/compact): the frontier's states are kept packed, a step
// is taken on a copy made by assignment, and the laws are checked over the
// state itself — a hundred thousand states a second and more on one core.
// Its tests hold it to the reference state for state, and a violation it
// finds is judged again on the reference before it is reported. The runner
// engine plays the target's own parts through the runner: a state is
// rebuilt from its parent, whose schedule is replayed once, and each step
// is taken on a copy of it (runner.World.Clone) when the target is made of
// the reference's in-memory parts; any other target — a SQL store, a
// process, a mutant store or broker — is searched statelessly, each state
// rebuilt by replaying its schedule against a fresh target, which is
// slower but exact. Both engines run the one breadth-first level loop of
// the search core (package internal/search), which expands each depth's
// frontier on every core and merges it in a fixed order, so a search is
// deterministic; the core's visited set holds the fingerprints, widened
// to its 128-bit keys.
package explore

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/idemcheck/idemcheck/faults/runner"
	"github.com/idemcheck/idemcheck/faults/scenario"
	"github.com/idemcheck/idemcheck/impl/system"
	"github.com/idemcheck/idemcheck/internal/search"
	"github.com/idemcheck/idemcheck/properties"
	"github.com/idemcheck/idemcheck/properties/coverage"
)

// Options bound and shape an exploration.
type Options struct {
	// World is the world explored.
	World World
	// Menu is the step kinds tried from every state (see Steps); nil is
	// FullMenu.
	Menu []string
	// Depth is the longest schedule explored (at least 1).
	Depth int
	// Properties judge every state (nil: every consumption property).
	Properties []properties.Property
	// Off switches laws off, as in properties.Options.
	Off map[string]string
	// Parallel is the number of goroutines expanding the frontier (0: one
	// per core).
	Parallel int
	// NoSymmetry, NoPOR and NoDedup switch the reductions off: symmetry,
	// partial order, and the visited set itself (a tree search).
	NoSymmetry, NoPOR, NoDedup bool
	// NoClone rebuilds every state by replaying its schedule, even for a
	// target whose worlds can be copied (runner.World.Clone).
	NoClone bool
	// Progress, if set, is called after every batch of the frontier.
	Progress func(Progress)
	// Engine chooses how states are built: EngineCompact searches the
	// reference's compact restatement (package explore/compact), fastest;
	// EngineRunner plays the target's own parts through the runner, copying
	// worlds where it can (see NoClone). The empty Engine is EngineCompact
	// for the reference when the world fits it (compact.MaxEvents and the
	// rest) and NoClone is not set, EngineRunner otherwise.
	Engine string
	// Coverage counts, for every distinct state, the named situations its
	// schedule and its drain reached (package coverage), into
	// Result.Coverage.
	Coverage bool
	// MaxTime, MaxStates and MaxBytes are budgets (zero: none): the wall
	// time, the distinct states, and the memory of the visited set and the
	// parent links. The search checks them before every batch of the
	// frontier and, when one is spent, ends with the depths done so far,
	// Result.Stopped saying which.
	MaxTime   time.Duration
	MaxStates int64
	MaxBytes  int64
	// FrontierMemory bounds the memory of the compact engine's frontier
	// being built (0: none): past it, the packed states are written to a
	// temporary file, a chunk at a time, and read back in order when the
	// depth is expanded (Result.FrontierSpilled says how much).
	FrontierMemory int64
}

// Progress is the state of a running exploration.
type Progress = search.Progress

// Level is what one depth added.
type Level = search.Level

// Result is the outcome of an exploration. Its search.Result holds
// States, the number of distinct states reached (the initial one
// included, those of a depth cut short by the context too);
// BytesPerState, the memory of the visited set and the parent links per
// state; Stopped ("interrupted" when the context ended the search early);
// and Elapsed, the wall time of the search.
type Result struct {
	search.Result
	// Depth is the deepest depth fully explored: every schedule of at most
	// Depth steps was played and judged.
	Depth int `json:"depth"`
	// Transitions is the number of steps executed, each from a distinct
	// state.
	Transitions int64 `json:"transitions"`
	// Skipped is the number of transitions the partial-order reduction did
	// not execute.
	Skipped int64 `json:"skipped"`
	// Levels are the depths explored, from 0.
	Levels []Level `json:"levels"`
	// Engine is the engine that searched (EngineCompact or EngineRunner).
	Engine string `json:"engine"`
	// FrontierStates and FrontierBytes are the compact engine's largest
	// frontier: its states, and the bytes they take packed
	// (compact.State.Pack). BytesPerState does not count them.
	FrontierStates int   `json:"frontierStates,omitempty"`
	FrontierBytes  int64 `json:"frontierBytes,omitempty"`
	// FrontierSpilled is the part of that frontier written to disk, past
	// Options.FrontierMemory.
	FrontierSpilled int64 `json:"frontierSpilled,omitempty"`
	// Interrupted is true when the context ended the search early (a
	// budget of Options ends it Stopped, not Interrupted).
	Interrupted bool `json:"interrupted,omitempty"`
	// Counterexample is the first violation found (nil: none).
	Counterexample *Counterexample `json:"counterexample,omitempty"`
	// Coverage counts the situations reached, a run per distinct state
	// judged (Options.Coverage).
	Coverage coverage.Counts `json:"coverage"`
}

// Counterexample is a shortest schedule that breaks a law. Its
// search.Counterexample names the law ("property/law", that of Verdict).
type Counterexample struct {
	search.Counterexample
	// Depth is the number of steps of the schedule.
	Depth int `json:"depth"`
	// Scenario is the world and the schedule: an ordinary scenario.
	Scenario *scenario.Scenario `json:"scenario"`
	// Verdict is the first failing verdict of the scenario, judged again
	// by properties.Judge.
	Verdict properties.Verdict `json:"verdict"`
	// Outcome is the run of the scenario (its trace, for the report).
	Outcome *runner.Outcome `json:"-"`
}

// engine is one exploration in progress.
type engine struct {
	target system.Target
	opts   Options
	base   *scenario.Consumption
	menu   []scenario.Step
	props  []properties.Property
	fpOpts runner.FingerprintOptions
	// bfs is the search: its levels of states, its visited set.
	bfs   *search.BFS
	res   *Result
	start time.Time
	pool  sync.Pool // *executor
	// skipped counts the compact engine's partial-order skips, from every
	// core; compactErr is its drift from the reference, if it found one.
	skipped    atomic.Int64
	compactErr error
	// batch, when set, is the parents expanded between two merges, on
	// either engine: the tests merge after every parent.
	batch int
}

// The engines (Options.Engine).
const (
	EngineCompact = "compact"
	EngineRunner  = "runner"
)

// ErrBounds is the error of bad bounds: the caller's mistake.
var ErrBounds = errors.New("explore: bad bounds")

// Explore enumerates every schedule of opts.World up to opts.Depth steps
// against target and judges every state. It returns the result so far when
// ctx ends (Interrupted). The error is for bad bounds (wrapping ErrBounds)
// or a target that cannot be played.
func Explore(ctx context.Context, target system.Target, opts Options) (*Result, error) {
	return explore(ctx, target, opts, 0)
}

// explore is Explore merging every batch parents (0: the engine's own).
func explore(ctx context.Context, target system.Target, opts Options, batch int) (*Result, error) {
	if opts.Depth < 1 {
		return nil, fmt.Errorf("%w: depth %d; need at least 1", ErrBounds, opts.Depth)
	}
	if target.Consumption == nil {
		return nil, fmt.Errorf("%w: target %q has no consumption parts", ErrBounds, target.Name)
	}
	base, err := opts.World.Scenario()
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBounds, err)
	}
	if opts.Menu == nil {
		opts.Menu = FullMenu
	}
	menu, err := Steps(base, opts.Menu)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBounds, err)
	}
	if len(menu) > 64 || opts.NoDedup {
		opts.NoPOR = true // the skip set is one word
	}
	props := opts.Properties
	if props == nil {
		props = properties.ForKind(scenario.KindConsumption)
	}
	e := &engine{target: target, opts: opts, base: base, menu: menu, res: &Result{}, start: time.Now(), batch: batch,
		fpOpts: runner.FingerprintOptions{SymmetricWorkers: !opts.NoSymmetry, SymmetricEvents: !opts.NoSymmetry}}
	e.bfs = &search.BFS{MaxDepth: opts.Depth, NoDedup: opts.NoDedup, Symmetric: !opts.NoSymmetry, Budget: &search.Budget{Context: ctx, Time: opts.MaxTime, Count: opts.MaxStates, Memory: opts.MaxBytes},
		Progress: opts.Progress, Start: e.start, Visited: search.NewSet()}
	for _, p := range props {
		if p.Kind == scenario.KindConsumption {
			e.props = append(e.props, p)
		}
	}
	e.pool.New = func() any { return &executor{fp: runner.NewFingerprinter(base, e.fpOpts)} }
	switch opts.Engine {
	case "":
		if system.IsReference(target.Consumption) && !opts.NoClone {
			if ce, cerr := e.newCompactEngine(); cerr == nil {
				err = e.runCompact(ce)
				break
			}
		}
		e.res.Engine = EngineRunner
		err = e.run()
	case EngineCompact:
		if !system.IsReference(target.Consumption) {
			return nil, fmt.Errorf("%w: engine %q searches the reference only; target %q is not it", ErrBounds, EngineCompact, target.Name)
		}
		ce, cerr := e.newCompactEngine()
		if cerr != nil {
			return nil, fmt.Errorf("%w: engine %q: %v", ErrBounds, EngineCompact, cerr)
		}
		err = e.runCompact(ce)
	case EngineRunner:
		e.res.Engine = EngineRunner
		err = e.run()
	default:
		return nil, fmt.Errorf("%w: unknown engine %q (known: %s, %s)", ErrBounds, opts.Engine, EngineCompact, EngineRunner)
	}
	e.res.Skipped += e.skipped.Load()
	if err == nil && e.compactErr != nil {
		err = e.compactErr
	}
	b := e.bfs
	e.res.Depth, e.res.States, e.res.Transitions, e.res.Levels = b.Depth, b.States, b.Transitions, b.Levels
	e.res.Interrupted = b.Stopped == search.Interrupted
	e.res.Stopped = b.Budget.Reason(b.Stopped)
	e.res.Elapsed = time.Since(e.start)
	if n := e.res.States; n > 0 {
		e.res.BytesPerState = float64(b.Bytes()) / float64(n)
	}
	// The visited set lives outside the Go heap: given back now, not at
	// some later collection.
	b.Visited.Free()
	return e.res, err
}

func (e *engine) parallel() int {
	if e.opts.Parallel > 0 {
		return e.opts.Parallel
	}
	return runtime.GOMAXPROCS(0)
}

// path writes the schedule of node i at depth d into buf.
func (e *engine) path(d int, i int32, buf []scenario.Step) []scenario.Step {
	buf = buf[:0]
	for ; d > 0; d-- {
		n := e.bfs.Nodes[d][i]
		buf = append(buf, e.menu[n.Move])
		i = n.Parent
	}
	for l, r := 0, len(buf)-1; l < r; l, r = l+1, r-1 {
		buf[l], buf[r] = buf[r], buf[l]
	}
	return buf
}

// cand is one transition executed: from a parent, by a menu step. Its
// Edge's SelfLoop marks a step that leaves its parent's state as it is (a
// step of an idle worker, a delivery to a busy one): not executed.
type cand struct {
	search.Edge
	world   *runner.World
	mons    []properties.Monitor
	steps   []scenario.Step
	err     error // the target could not be opened
	trk     *coverage.Tracker
	reached coverage.Set
	judged  bool
}

// Head is the part of c the search merges.
func (c *cand) Head() *search.Edge { return &c.Edge }

// batch is the number of parents the runner engine expands between two
// merges; compactBatch the compact engine's, whose parents are cheaper.
const (
	batch        = 64
	compactBatch = 1024
)

// run searches on the runner engine.
func (e *engine) run() error {
	e.bfs.Batch = e.batchOf(batch)
	err := search.RunStepper(e.bfs, runnerModel{e}, e.parallel())
	e.res.Skipped += e.bfs.Skipped
	return err
}

// runnerModel is the runner engine as the model of a breadth-first search
// (search.Stepper): a state is a world the runner played, and a step a
// menu step taken on a copy of it (runner.World.Clone), or, for a target
// that cannot be copied, on a world that plays the schedule again.
type runnerModel struct{ e *engine }

// Moves is the menu's size.
func (r runnerModel) Moves() int { return len(r.e.menu) }

// Scratch is a goroutine's fingerprinter and buffer.
func (r runnerModel) Scratch() *executor { return r.e.executor() }

// Release takes a goroutine's scratch back.
func (r runnerModel) Release(x *executor) { r.e.release(x) }

// Transition is the step move from parent, not yet taken.
func (runnerModel) Transition(parent int32, move int16) *cand {
	return &cand{Edge: search.Edge{Parent: parent, Move: move}}
}

// Restore plays the schedule of path on a fresh world.
func (r runnerModel) Restore(x *executor, path []int16) (*cand, error) {
	e := r.e
	x.buf = x.buf[:0]
	for _, m := range path {
		x.buf = append(x.buf, e.menu[m])
	}
	c := &cand{}
	e.execute(x, c, x.buf, -1)
	if c.err != nil {
		return nil, fmt.Errorf("explore: target %q: %w", e.target.Name, c.err)
	}
	return c, nil
}

// Step takes c's step from parent's state: a self-loop when it leaves the
// state as it is, else on a copy of parent's world, or on a world that
// plays parent's schedule again.
func (r runnerModel) Step(x *executor, parent, c *cand) error {
	e := r.e
	if !e.opts.NoDedup && e.noop(parent.world, e.menu[c.Move]) {
		// The step leaves the state as it is: a self-loop, known.
		c.SelfLoop = true
		return nil
	}
	if !e.fork(x, parent, c) {
		e.execute(x, c, parent.steps, int(c.Move))
	}
	if c.err != nil {
		return fmt.Errorf("explore: target %q: %w", e.target.Name, c.err)
	}
	return nil
}

// Drop closes c's world, if it has one.
func (runnerModel) Drop(c *cand) {
	if c != nil && c.world != nil {
		c.world.Close()
	}
}

// Judge finishes and judges each transition's run.
func (r runnerModel) Judge(cs []*cand, d int) bool { return r.e.finals(cs, d) }

// batchOf is the parents expanded between two merges: def, or the test's
// choice.
func (e *engine) batchOf(def int) int {
	if e.batch > 0 {
		return e.batch
	}
	return def
}

// noop reports whether st leaves w's state as it is and records nothing:
// a pipeline step of an idle worker, or a delivery to a busy one.
func (e *engine) noop(w *runner.World, st scenario.Step) bool {
	switch st.Op {
	case scenario.OpRun:
		_, busy := w.View().Busy(st.Worker)
		return !busy
	case scenario.OpDeliver:
		_, busy := w.View().Busy(st.Worker)
		return busy
	}
	return false
}

// fork takes c's step on a copy of the parent's world and monitors; it
// reports false when the world or a monitor cannot be copied.
func (e *engine) fork(x *executor, parent, c *cand) bool {
	if e.opts.NoClone {
		return false
	}
	c.mons = make([]properties.Monitor, len(parent.mons))
	obs := make([]runner.Observer, 0, len(parent.mons))
	for i, m := range parent.mons {
		if m == nil {
			continue
		}
		cm, ok := properties.CloneMonitor(m)
		if !ok {
			return false
		}
		c.mons[i] = cm
		obs = append(obs, cm)
	}
	if parent.trk != nil {
		c.trk = parent.trk.Clone()
		obs = append(obs, c.trk)
	}
	w, ok := parent.world.Clone(obs...)
	if !ok {
		return false
	}
	c.world = w
	c.steps = make([]scenario.Step, 0, len(parent.steps)+1)
	c.steps = append(c.steps, parent.steps...)
	e.take(x, c, int(c.Move))
	return true
}

// executor is one goroutine's reusable scratch.
type executor struct {
	fp  *runner.Fingerprinter
	buf []scenario.Step
}

func (e *engine) executor() *executor { return e.pool.Get().(*executor) }

func (e *engine) release(x *executor) { e.pool.Put(x) }

// execute plays prefix and then menu step s (-1: none) on a fresh world
// with the monitors attached, and fingerprints the state reached. The world
// stays open for the final judgement.
func (e *engine) execute(x *executor, c *cand, prefix []scenario.Step, s int) {
	c.mons = make([]properties.Monitor, len(e.props))
	obs := make([]runner.Observer, 0, len(e.props))
	for i, p := range e.props {
		if p.Monitor != nil {
			c.mons[i] = p.Monitor()
			obs = append(obs, c.mons[i])
		}
	}
	if e.opts.Coverage {
		c.trk = coverage.NewTracker()
		obs = append(obs, c.trk)
	}
	w, err := runner.NewWorld(e.base, e.target.Consumption, obs...)
	if err != nil {
		c.err = err
		return
	}
	c.world = w
	c.steps = make([]scenario.Step, 0, len(prefix)+1)
	c.steps = append(c.steps, prefix...)
	for i, st := range prefix {
		_ = w.Apply(i, st)
	}
	e.take(x, c, s)
}

// take plays menu step s (-1: none) on c's world, then judges the monitors
// and fingerprints the state reached.
func (e *engine) take(x *executor, c *cand, s int) {
	w := c.world
	ev := -1
	if s >= 0 {
		st := e.menu[s]
		ev = e.busyEvent(w, st)
		_ = w.Apply(len(c.steps), st)
		c.steps = append(c.steps, st)
	}
	for i, m := range c.mons {
		if m != nil && e.breaks(e.props[i], m.Breaches()) {
			c.Broken = true
		}
	}
	if !e.opts.NoDedup {
		c.Key = search.Key64(x.fp.Sum(w))
	}
	if !e.opts.NoPOR && s >= 0 {
		c.Skip = e.skipSet(w, s, ev)
	}
}

// busyEvent is the index of the event the worker of a step or crash holds
// a delivery of (-1: another kind of step, or an idle worker).
func (e *engine) busyEvent(w *runner.World, st scenario.Step) int {
	if st.Op != scenario.OpRun && st.Op != scenario.OpCrash {
		return -1
	}
	k, busy := w.View().Busy(st.Worker)
	if !busy {
		return -1
	}
	for i, ev := range e.base.Events {
		if ev.ID == k.ID {
			return i
		}
	}
	return -1
}

// skipSet is the menu steps the partial-order reduction need not take
// after step y (which acted on event ey): a step or crash of another worker
// busy with another event commutes with y, and its order with y before it
// (the lower menu index first) is explored instead.
func (e *engine) skipSet(w *runner.World, y, ey int) uint64 {
	if ey < 0 {
		return 0
	}
	var skip uint64
	sy := e.menu[y]
	for x := 0; x < y; x++ {
		sx := e.menu[x]
		if (sx.Op != scenario.OpRun && sx.Op != scenario.OpCrash) || sx.Worker == sy.Worker {
			continue
		}
		if ex := e.busyEvent(w, sx); ex >= 0 && ex != ey {
			skip |= 1 << x
		}
	}
	return skip
}

// breaks reports whether breaches hold a law that is not switched off.
func (e *engine) breaks(p properties.Property, bs []properties.Breach) bool {
	for _, b := range bs {
		if _, off := e.opts.Off[properties.ID(p.Name, b.Law)]; !off {
			return true
		}
	}
	return false
}

// finals finishes each candidate's run (drain, replay, drain, probe) on
// every core and judges the final checks; it reports the first violation,
// in the candidates' order, and closes every world.
func (e *engine) finals(cs []*cand, d int) bool {
	search.Parallel(e.parallel(), len(cs), nil, nil, func(_ struct{}, i int) {
		c := cs[i]
		if !c.Broken {
			c.world.Finish()
			out := &runner.Outcome{Scenario: e.scenario(c.steps), Target: e.target.Name, Trace: c.world.Trace(), Consumption: c.world.Result()}
			for j, p := range e.props {
				// The monitors watched the drain and the replay too.
				if m := c.mons[j]; m != nil && e.breaks(p, m.Breaches()) {
					c.Broken = true
				}
				if p.Final != nil && e.breaks(p, p.Final(out, c.mons[j])) {
					c.Broken = true
				}
			}
			if c.trk != nil {
				c.trk.Finish(out)
				c.reached, c.judged = c.trk.Reached(), true
			}
		}
		c.world.Close()
		c.world, c.mons, c.trk = nil, nil, nil
	})
	for _, c := range cs {
		if c.judged {
			e.res.Coverage.AddRun(scenario.KindConsumption, c.reached)
		}
	}
	for _, c := range cs {
		if c.Broken {
			e.res.Counterexample = e.counterexample(c.steps, d)
			return true
		}
	}
	return false
}

func (e *engine) scenario(steps []scenario.Step) *scenario.Scenario {
	c := *e.base
	c.Steps = steps
	return &scenario.Scenario{Version: scenario.Version, Kind: scenario.KindConsumption, Consumption: &c}
}

// counterexample judges the violating schedule again, as any scenario is
// judged, for its verdict and trace.
func (e *engine) counterexample(steps []scenario.Step, d int) *Counterexample {
	s := e.scenario(steps)
	cx := &Counterexample{Depth: d, Scenario: s}
	out, vs, err := properties.Judge(s, e.target, e.props, properties.JudgeOptions{Off: e.opts.Off})
	if err != nil {
		cx.Verdict = properties.Verdict{Property: "explore", Summary: err.Error()}
		return cx
	}
	cx.Outcome = out
	if f := properties.Failed(vs); len(f) > 0 {
		cx.Verdict = f[0]
		cx.Law = properties.ID(f[0].Property, f[0].Law)
	}
	return cx
}
