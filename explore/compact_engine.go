package explore

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/idemcheck/idemcheck/explore/compact"
	"github.com/idemcheck/idemcheck/faults/scenario"
	"github.com/idemcheck/idemcheck/internal/search"
	"github.com/idemcheck/idemcheck/properties"
	"github.com/idemcheck/idemcheck/properties/coverage"
)

// The compact engine searches the reference on its compact restatement
// (package explore/compact): the frontier's states are kept whole, a step
// is taken on a copy made by assignment, and a state is fingerprinted from
// its own bytes. Its levels, transitions and reductions are those of the
// runner engine (run), state for state; a violation it finds is judged
// again on the reference itself before it is reported.

// compactEngine is the compact engine's part of an exploration.
type compactEngine struct {
	cfg  *compact.Config
	menu []compact.Step
	on   func(compact.Law) bool
}

// newCompactEngine returns the compact engine for e's world, or an error
// saying why the world cannot be searched on it.
func (e *engine) newCompactEngine() (*compactEngine, error) {
	cfg, err := compact.NewConfig(e.base)
	if err != nil {
		return nil, err
	}
	ce := &compactEngine{cfg: cfg}
	for _, st := range e.menu {
		cs, err := compact.Compile(cfg, st)
		if err != nil {
			return nil, err
		}
		ce.menu = append(ce.menu, cs)
	}
	enabled := map[string]bool{}
	for _, p := range e.props {
		enabled[p.Name] = true
	}
	ce.on = func(l compact.Law) bool {
		names := compact.Laws[l]
		_, off := e.opts.Off[properties.ID(names[0], names[1])]
		return enabled[names[0]] && !off
	}
	return ce, nil
}

// ccand is one transition of the compact engine.
type ccand struct {
	parent int32
	step   int16
	fp     search.Key
	skip   uint64
	state  []byte // packed (compact.State.Pack)
	broken compact.Law
	isNew  bool
}

// cworker is one goroutine's scratch.
type cworker struct {
	fp              *compact.Fingerprinter
	judge           *compact.Judge
	parent, scratch compact.State
	arena           []byte
}

// pack packs s into the worker's arena: packed states share large
// allocations instead of one each.
func (x *cworker) pack(cfg *compact.Config, s *compact.State) []byte {
	if cap(x.arena)-len(x.arena) < 4096 {
		x.arena = make([]byte, 0, 1<<20)
	}
	start := len(x.arena)
	x.arena = s.Pack(cfg, x.arena)
	return x.arena[start:len(x.arena):len(x.arena)]
}

func (e *engine) runCompact(ctx context.Context, ce *compactEngine) error {
	e.res.Engine = EngineCompact
	pool := sync.Pool{New: func() any {
		return &cworker{fp: compact.NewFingerprinter(ce.cfg, !e.opts.NoSymmetry, !e.opts.NoSymmetry), judge: compact.NewJudge(ce.on, e.opts.Coverage)}
	}}
	root := compact.New(ce.cfg)
	x := pool.Get().(*cworker)
	rc := &ccand{parent: -1, step: -1, state: root.Pack(ce.cfg, nil), isNew: true}
	rc.fp = search.Key64(x.fp.Sum(root))
	pool.Put(x)
	e.visited.Add(rc.fp)
	e.levels = append(e.levels, []node{{parent: -1, step: -1}})
	e.res.States = 1
	e.res.Levels = append(e.res.Levels, Level{Depth: 0, States: 1})
	if e.compactFinals(ce, &pool, []*ccand{rc}, 0) {
		return nil
	}
	frontier := [][]byte{rc.state}
	for d := 1; d <= e.opts.Depth; d++ {
		var next []node
		var nextStates [][]byte
		var keep arena
		nextIdx := search.NewSet()
		// The deepest level's states are judged, never expanded: none is
		// kept.
		last := d == e.opts.Depth
		lvl := Level{Depth: d}
		cbatch := e.batchOf(compactBatch)
		for lo := 0; lo < len(frontier); lo += cbatch {
			if ctx.Err() != nil {
				e.interrupt(next)
				return nil
			}
			hi := min(lo+cbatch, len(frontier))
			cands, taken := e.expandCompact(ce, &pool, d, frontier, lo, hi, nextIdx)
			lvl.Transitions += taken
			e.res.Transitions += taken
			var fresh []*ccand
			for _, c := range cands {
				if c.broken != compact.LawNone {
					fresh = append(fresh, c)
					continue
				}
				if c.isNew = e.admit(c.fp, c.skip, next, nextIdx); c.isNew {
					next = append(next, node{parent: c.parent, step: c.step, skip: c.skip})
					if !last {
						nextStates = append(nextStates, keep.add(c.state))
					}
					fresh = append(fresh, c)
				}
			}
			if e.compactFinals(ce, &pool, fresh, d) {
				e.stopAt(lvl, next)
				return nil
			}
			e.progress(d, len(frontier), hi, len(next))
		}
		done := e.closeLevel(lvl, next)
		frontier = nextStates
		var packed int64
		for _, s := range frontier {
			packed += int64(len(s))
		}
		if packed > e.res.FrontierBytes {
			e.res.FrontierStates, e.res.FrontierBytes = len(frontier), packed
		}
		if done {
			break
		}
	}
	return nil
}

// expandCompact takes every menu step from the frontier states lo..hi-1
// on every core; it returns, in a fixed order, the transitions that reach
// a state not visited before this batch or break a law, and the number of
// transitions taken.
//
// A state visited before is dropped at once — unless the partial-order
// reduction is on and it was first reached at this very depth, where the
// merge intersects the skip sets of every edge into it. nextIdx is only
// read here: the merge, which writes it, waits for the batch.
func (e *engine) expandCompact(ce *compactEngine, pool *sync.Pool, d int, frontier [][]byte, lo, hi int, nextIdx *search.Set) ([]*ccand, int64) {
	per := make([][]*ccand, hi-lo)
	var taken atomic.Int64
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(e.parallel(), hi-lo) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			x := pool.Get().(*cworker)
			defer pool.Put(x)
			n := int64(0)
			for {
				i := int(next.Add(1)) - 1
				if i >= hi-lo {
					break
				}
				p := lo + i
				per[i] = e.expandCompactParent(ce, x, d, int32(p), frontier[p], nextIdx, &n)
			}
			taken.Add(n)
		}()
	}
	wg.Wait()
	var out []*ccand
	for _, cs := range per {
		out = append(out, cs...)
	}
	return out, taken.Load()
}

func (e *engine) expandCompactParent(ce *compactEngine, x *cworker, d int, p int32, packed []byte, nextIdx *search.Set, taken *int64) []*ccand {
	var out []*ccand
	parent := &x.parent
	parent.Unpack(ce.cfg, packed)
	skip := e.levels[d-1][p].skip
	for si, st := range ce.menu {
		if !e.opts.NoPOR && skip&(1<<si) != 0 {
			e.skipped.Add(1)
			continue
		}
		*taken++
		if !e.opts.NoDedup {
			busy := parent.Busy(st.Worker) >= 0
			if (st.IsStep() && !busy) || (st.IsDeliver() && busy) {
				continue // a self-loop
			}
		}
		ev := -1
		if st.IsPipeline() {
			ev = parent.Busy(st.Worker)
		}
		s := &x.scratch
		s.CopyFrom(parent)
		x.judge.Reset()
		s.Apply(ce.cfg, x.judge, st)
		c := &ccand{parent: p, step: int16(si), broken: x.judge.Broken()}
		if !e.opts.NoDedup {
			c.fp = search.Key64(x.fp.Sum(s))
			if c.broken == compact.LawNone && e.visited.Has(c.fp) {
				if _, thisDepth := nextIdx.Get(c.fp); e.opts.NoPOR || !thisDepth {
					continue // known: only the parent links of new states are kept
				}
			}
		}
		if !e.opts.NoPOR {
			c.skip = ce.skipSet(s, si, ev)
		}
		c.state = x.pack(ce.cfg, s)
		out = append(out, c)
	}
	return out
}

// skipSet is the runner engine's skipSet over a compact state.
func (ce *compactEngine) skipSet(s *compact.State, y, ey int) uint64 {
	if ey < 0 {
		return 0
	}
	var skip uint64
	sy := ce.menu[y]
	for x := 0; x < y; x++ {
		sx := ce.menu[x]
		if !sx.IsPipeline() || sx.Worker == sy.Worker {
			continue
		}
		if ex := s.Busy(sx.Worker); ex >= 0 && ex != ey {
			skip |= 1 << x
		}
	}
	return skip
}

// compactFinals finishes a copy of each candidate's state (drain, replay,
// drain, probe) on every core and judges the final laws; it reports the
// first violation, in the candidates' order.
func (e *engine) compactFinals(ce *compactEngine, pool *sync.Pool, cs []*ccand, d int) bool {
	reached := make([]uint64, len(cs))
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(e.parallel(), len(cs)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			x := pool.Get().(*cworker)
			defer pool.Put(x)
			for {
				i := int(next.Add(1)) - 1
				if i >= len(cs) {
					return
				}
				c := cs[i]
				if c.broken != compact.LawNone {
					continue
				}
				x.scratch.Unpack(ce.cfg, c.state)
				x.judge.Reset()
				x.scratch.Finish(ce.cfg, x.judge)
				c.broken = x.judge.Broken()
				reached[i] = uint64(x.scratch.Coverage())
			}
		}()
	}
	wg.Wait()
	if e.opts.Coverage {
		for i, c := range cs {
			if c.isNew && c.broken == compact.LawNone {
				e.res.Coverage.AddRun(scenario.KindConsumption, coverageSet(reached[i]))
			}
		}
	}
	for _, c := range cs {
		if c.broken == compact.LawNone {
			continue
		}
		steps := e.path(d-1, c.parent, nil)
		if c.step >= 0 {
			steps = append(steps, e.menu[c.step])
		}
		cx := e.counterexample(steps, d)
		if cx.Outcome == nil {
			e.compactErr = fmt.Errorf("explore: judging the compact engine's counterexample on the reference: %s", cx.Verdict.Summary)
			return true
		}
		if cx.Verdict.Property == "" {
			e.compactErr = fmt.Errorf("explore: the compact model of the reference breaks %s after %d steps, but the reference passes the same schedule: the model has drifted (explore with Engine %q): %s",
				c.broken, d, EngineRunner, scheduleText(steps))
			return true
		}
		e.res.Counterexample = cx
		return true
	}
	return false
}

func coverageSet(x uint64) coverage.Set { return coverage.Set(x) }

func scheduleText(steps []scenario.Step) string {
	s := ""
	for i, st := range steps {
		if i > 0 {
			s += ", "
		}
		s += fmt.Sprintf("%s %+v", st.Op, st)
	}
	return s
}
