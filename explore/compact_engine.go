package explore

import (
	"fmt"
	"sync"

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

// ccand is one transition of the compact engine; its Edge's Broken is
// set when law is.
type ccand struct {
	search.Edge
	state []byte // packed (compact.State.Pack)
	law   compact.Law
}

// Head is the part of c the search merges.
func (c *ccand) Head() *search.Edge { return &c.Edge }

// cworker is one goroutine's scratch.
type cworker struct {
	fp              *compact.Fingerprinter
	judge           *compact.Judge
	parent, scratch compact.State
	arena           []byte
	cands           []ccand
	// states, kids and keys are a parent's moves being expanded; warm
	// keeps what search.BFS.Warm read.
	states []compact.State
	kids   []child
	keys   []search.Key
	warm   uint64
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

// cand returns a new candidate from the worker's slab: candidates live
// until their batch is merged and judged, a few thousand at a time, and
// one allocation for many spares the allocator and collector.
func (x *cworker) cand() *ccand {
	if len(x.cands) == cap(x.cands) {
		x.cands = make([]ccand, 0, 1024)
	}
	x.cands = x.cands[:len(x.cands)+1]
	return &x.cands[len(x.cands)-1]
}

// compactSearch is the compact engine's side of the search: the packed
// states of the depth expanded (frontier) and of the depth being built
// (next).
type compactSearch struct {
	e        *engine
	ce       *compactEngine
	pool     *sync.Pool
	frontier *packedStates
	next     *packedStates
}

func (e *engine) runCompact(ce *compactEngine) error {
	e.res.Engine = EngineCompact
	pool := &sync.Pool{New: func() any {
		return &cworker{fp: compact.NewFingerprinter(ce.cfg, !e.opts.NoSymmetry, !e.opts.NoSymmetry), judge: compact.NewJudge(ce.on, e.opts.Coverage)}
	}}
	root := compact.New(ce.cfg)
	x := pool.Get().(*cworker)
	rc := &ccand{Edge: search.Edge{Parent: -1, Move: -1}, state: root.Pack(ce.cfg, nil)}
	rc.Key = search.Key64(x.fp.Sum(root))
	pool.Put(x)
	cs := &compactSearch{e: e, ce: ce, pool: pool, frontier: newPackedStates(0), next: newPackedStates(e.opts.FrontierMemory)}
	cs.frontier.add(rc.state)
	defer func() {
		cs.frontier.free()
		cs.next.free()
	}()
	e.bfs.Batch = e.batchOf(compactBatch)
	return search.Run(e.bfs, cs, rc)
}

func (cs *compactSearch) Expand(d, lo, hi int) ([]*ccand, int64, error) {
	if err := cs.frontier.load(lo, hi); err != nil {
		return nil, 0, err
	}
	out, taken := cs.e.expandCompact(cs.ce, cs.pool, d, cs.frontier, lo, hi)
	return out, taken, nil
}

// Keep keeps the state of c for the next depth — but the deepest depth's
// states are judged, never expanded: none is kept.
func (cs *compactSearch) Keep(c *ccand, d int) {
	if d < cs.e.opts.Depth {
		cs.next.add(c.state)
	}
}

func (*compactSearch) Drop(*ccand) {}

func (cs *compactSearch) Judge(c []*ccand, d int) bool {
	return cs.e.compactFinals(cs.ce, cs.pool, c, d)
}

// Closed makes the depth built the frontier, and records it if it is the
// largest yet.
func (cs *compactSearch) Closed(int) {
	cs.frontier.free()
	cs.frontier, cs.next = cs.next, newPackedStates(cs.e.opts.FrontierMemory)
	if r := cs.e.res; cs.frontier.bytes > r.FrontierBytes {
		r.FrontierStates, r.FrontierBytes, r.FrontierSpilled = cs.frontier.len(), cs.frontier.bytes, cs.frontier.spilled()
	}
}

// expandCompact takes every menu step from the frontier states lo..hi-1
// on every core; it returns, in a fixed order, the transitions that reach
// a state not visited before this batch or break a law, and the number of
// transitions taken.
//
// A state visited before is dropped at once — unless the partial-order
// reduction is on and it was first reached at this very depth, where the
// merge intersects the skip sets of every edge into it (search.BFS.Known).
func (e *engine) expandCompact(ce *compactEngine, pool *sync.Pool, d int, frontier *packedStates, lo, hi int) ([]*ccand, int64) {
	per := make([][]*ccand, hi-lo)
	taken := make([]int64, hi-lo)
	search.Parallel(e.parallel(), hi-lo, func() *cworker { return pool.Get().(*cworker) }, func(x *cworker) { pool.Put(x) }, func(x *cworker, i int) {
		p := lo + i
		per[i], taken[i] = e.expandCompactParent(ce, x, d, int32(p), frontier.get(p))
	})
	var out []*ccand
	var n int64
	for i, cs := range per {
		out = append(out, cs...)
		n += taken[i]
	}
	return out, n
}

func (e *engine) expandCompactParent(ce *compactEngine, x *cworker, d int, p int32, packed []byte) ([]*ccand, int64) {
	taken := int64(0)
	parent := &x.parent
	parent.Unpack(ce.cfg, packed)
	skip := e.bfs.Nodes[d-1][p].Skip
	// Every move first, each into a state of its own, fingerprinted; then
	// the visited set is asked of them all at once (search.BFS.Warm), and
	// only the transitions it does not drop become candidates.
	kids, keys := x.kids[:0], x.keys[:0]
	for si, st := range ce.menu {
		if !e.opts.NoPOR && skip&(1<<si) != 0 {
			e.skipped.Add(1)
			continue
		}
		taken++
		if !e.opts.NoDedup {
			busy := parent.Busy(st.Worker) >= 0
			if (st.IsStep() && !busy) || (st.IsDeliver() && busy) || st.Idle(ce.cfg, parent) {
				// A self-loop: it reaches the parent's state, visited at
				// the depth before, which Known would drop.
				continue
			}
		}
		k := child{si: si, ev: -1}
		if st.IsPipeline() {
			k.ev = parent.Busy(st.Worker)
		}
		if len(kids) == len(x.states) {
			x.states = append(x.states, compact.State{})
		}
		s := &x.states[len(kids)]
		s.CopyFrom(parent)
		x.judge.Reset()
		s.Apply(ce.cfg, x.judge, st)
		k.law = x.judge.Broken()
		if !e.opts.NoDedup {
			k.key = search.Key64(x.fp.Sum(s))
			keys = append(keys, k.key)
		}
		kids = append(kids, k)
	}
	x.kids, x.keys = kids, keys
	if len(keys) > 0 {
		x.warm += e.bfs.Warm(keys)
	}
	var out []*ccand
	for i, k := range kids {
		s := &x.states[i]
		broken := k.law != compact.LawNone
		if !e.opts.NoDedup && !broken && e.bfs.Known(k.key, e.opts.NoPOR) {
			continue // known: only the parent links of new states are kept
		}
		c := x.cand()
		*c = ccand{Edge: search.Edge{Parent: p, Move: int16(k.si), Key: k.key, Broken: broken}, law: k.law}
		if !e.opts.NoPOR {
			c.Skip = ce.skipSet(s, k.si, k.ev)
		}
		// Packed to be judged after the merge, even at the deepest depth:
		// judging each transition where it is reached would judge again
		// every state the batch reaches by several edges (about half the
		// transitions Known keeps at 2 events x 2 workers), and a state is
		// packed and unpacked for much less than it is finished.
		c.state = x.pack(ce.cfg, s)
		out = append(out, c)
	}
	return out, taken
}

// child is a move expandCompactParent took: its menu step, the event of
// the worker it steps (-1: none), the law it broke on the way and the key
// of the state it reached (in cworker.states, at the child's index).
type child struct {
	si, ev int
	law    compact.Law
	key    search.Key
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
	search.Parallel(e.parallel(), len(cs), func() *cworker { return pool.Get().(*cworker) }, func(x *cworker) { pool.Put(x) }, func(x *cworker, i int) {
		c := cs[i]
		if c.Broken {
			return
		}
		x.scratch.Unpack(ce.cfg, c.state)
		x.judge.Reset()
		x.scratch.Finish(ce.cfg, x.judge)
		c.law = x.judge.Broken()
		reached[i] = uint64(x.scratch.Coverage())
		c.Broken = c.law != compact.LawNone
	})
	if e.opts.Coverage {
		var t coverage.Tally
		for i, c := range cs {
			if c.New && !c.Broken {
				t.Add(coverageSet(reached[i]))
			}
		}
		e.res.Coverage.AddTally(scenario.KindConsumption, &t)
	}
	for _, c := range cs {
		if !c.Broken {
			continue
		}
		steps := e.path(d-1, c.Parent, nil)
		if c.Move >= 0 {
			steps = append(steps, e.menu[c.Move])
		}
		cx := e.counterexample(steps, d)
		if cx.Outcome == nil {
			e.compactErr = fmt.Errorf("explore: judging the compact engine's counterexample on the reference: %s", cx.Verdict.Summary)
			return true
		}
		if cx.Verdict.Property == "" {
			e.compactErr = fmt.Errorf("explore: the compact model of the reference breaks %s after %d steps, but the reference passes the same schedule: the model has drifted (explore with Engine %q): %s",
				c.law, d, EngineRunner, scheduleText(steps))
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
