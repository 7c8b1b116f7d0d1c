package search

import (
	"slices"
	"sync"
	"unsafe"
)

// The depth-first strategy: a stateless search over the choices of a
// scheduler, replaying each schedule from the initial state (CHESS,
// loom). Its model plays a schedule and, at every decision point, hands
// the search the moves enabled there (each with its footprint) and the
// state's key; the search keeps the path of decision points, puts to
// sleep the moves whose other order was explored (sleep sets), keeps the
// preemption bound sound while doing so (CostSafe), and prunes a state
// explored before with at least the budget and no more moves asleep
// (Cache). The model says when two footprints conflict.

// MoveID names a move the same way in every run that meets it: its kind
// (the model's), the worker it moves or acts on (-1: none) and an
// argument.
type MoveID struct {
	Kind   uint8
	Worker int8
	Arg    int64
}

// CompareMoveIDs orders moves by kind, worker and argument.
func CompareMoveIDs(a, b MoveID) int {
	if a.Kind != b.Kind {
		return int(a.Kind) - int(b.Kind)
	}
	if a.Worker != b.Worker {
		return int(a.Worker) - int(b.Worker)
	}
	switch {
	case a.Arg < b.Arg:
		return -1
	case a.Arg > b.Arg:
		return 1
	}
	return 0
}

// Move is a move enabled at a decision point, with its footprint F: two
// moves whose footprints do not conflict commute.
type Move[F any] struct {
	ID        MoveID
	Footprint F
	// Own says the move is its worker's own step (the schedule is then on
	// that worker); Crash that it crashes its worker.
	Own, Crash bool
}

// Sleeper is a move asleep: its other order was explored already. After
// is whether its worker could still move after it (-1: not known).
type Sleeper[F any] struct {
	Move[F]
	After int8
}

// Frame is a decision point on the path of a depth-first search.
type Frame[F any] struct {
	Moves []Move[F]
	// Tried marks the moves explored (or being explored: Cur).
	Tried []bool
	Cur   int
	// After is, per move tried, whether its worker could still move after
	// it (-1: not known): what CostSafe needs of a move put to sleep.
	After []int8
	Sleep []Sleeper[F]
	// Worker is the worker the schedule was on here, and Movable whether
	// it could move.
	Worker  int
	Movable bool
	// Key names the state here (KeyOK: it could be named): a run that
	// plays the path again must meet the same state.
	Key   Key
	KeyOK bool
	// Aux is the model's own record of the point: what it reports when a
	// run that plays the path again meets another state there.
	Aux any
}

// NewFrame returns the decision point of moves, with the moves of sleep
// asleep, at its first move awake (Cur -1: none), and how many moves
// sleep.
func NewFrame[F any](moves []Move[F], sleep []Sleeper[F], worker int, movable bool, key Key, keyOK bool, aux any) (*Frame[F], int) {
	f := &Frame[F]{Moves: moves, Tried: make([]bool, len(moves)), After: make([]int8, len(moves)), Sleep: sleep,
		Worker: worker, Movable: movable, Cur: -1, Key: key, KeyOK: keyOK, Aux: aux}
	asleep := 0
	for i := range moves {
		f.After[i] = -1
		if f.Asleep(moves[i].ID) {
			asleep++
			continue
		}
		if f.Cur < 0 {
			f.Cur = i
		}
	}
	return f, asleep
}

// Asleep reports whether move id sleeps at f.
func (f *Frame[F]) Asleep(id MoveID) bool {
	for _, z := range f.Sleep {
		if z.ID == id {
			return true
		}
	}
	return false
}

// Next marks the current move tried and moves to the next move to try;
// false when every move awake was tried.
func (f *Frame[F]) Next() bool {
	f.Tried[f.Cur] = true
	for i := range f.Moves {
		if !f.Tried[i] && !f.Asleep(f.Moves[i].ID) {
			f.Cur = i
			return true
		}
	}
	return false
}

// Give hands a move not yet tried to another searcher: it returns a copy
// of f whose current move is the first move awake neither current nor
// tried, now marked tried at f (nil: none is left).
func (f *Frame[F]) Give() *Frame[F] {
	for i := range f.Moves {
		if i == f.Cur || f.Tried[i] || f.Asleep(f.Moves[i].ID) {
			continue
		}
		f.Tried[i] = true
		g := *f
		g.Cur, g.Tried, g.After = i, slices.Clone(f.Tried), slices.Clone(f.After)
		return &g
	}
	return nil
}

// ChildSleep is the sleep set of the child of f through its current move
// t: the moves asleep at f and those tried before t at f, each kept when
// it commutes with t (conflicts says it does not) and when trying it
// first could not need more preemptions than the order it stands for
// (costSafe, CostSafe but where a test breaks it on purpose).
//
// The moves tried before t are those before it in f's order, asleep at f
// or not: the search tries them in that order (a searcher that hands a
// move to another still counts the ones before it as tried first, and
// their subtrees are searched all the same).
func (f *Frame[F]) ChildSleep(conflicts func(a, b F) bool, costSafe func(f *Frame[F], z Sleeper[F], t Move[F]) bool) []Sleeper[F] {
	t := f.Moves[f.Cur]
	var out []Sleeper[F]
	keep := func(z Sleeper[F]) {
		if !conflicts(z.Footprint, t.Footprint) && costSafe(f, z, t) {
			out = append(out, z)
		}
	}
	for _, z := range f.Sleep {
		keep(z)
	}
	for j := range f.Cur {
		if !f.Asleep(f.Moves[j].ID) {
			keep(Sleeper[F]{Move: f.Moves[j], After: f.After[j]})
		}
	}
	return out
}

// CostSafe reports whether move z may sleep below t at f under the
// preemption bound. Asleep there, the schedules t z ... are left to the
// schedules z t ... tried before; that is sound only when z t ... costs
// no more preemptions than t z ... for every continuation, or the bound
// could cut the schedule that stands for one within it. Switching away
// from the worker the schedule is on costs one when it can still move;
// moves of two different workers leave the schedule on different workers,
// so the worst continuation (back to the other) is counted.
func CostSafe[F any](f *Frame[F], z Sleeper[F], t Move[F]) bool {
	c := f.Worker
	mc := 0
	if f.Movable {
		mc = 1
	}
	switch {
	case !z.Own && !t.Own:
		return true
	case z.Own && !t.Own:
		// A crash of the worker the schedule is on makes switching free:
		// z after it may cost less than z before it.
		return !(t.Crash && int(t.ID.Worker) == c && mc == 1 && int(z.ID.Worker) != c)
	case !z.Own && t.Own:
		return true
	}
	d, e := int(t.ID.Worker), int(z.ID.Worker)
	after := int(z.After)
	if after < 0 {
		after = 1
	}
	return mc*b2i(c != e)+after <= mc*b2i(c != d)
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// Canonical renames the workers of a sleep set by perm (a worker's place
// in the state's canonical order) and sorts it, so that the sleep sets of
// two states alike but for their workers' names compare.
func Canonical[F any](sleep []Sleeper[F], perm []int) []MoveID {
	out := make([]MoveID, 0, len(sleep))
	for _, z := range sleep {
		id := z.ID
		if id.Worker >= 0 {
			id.Worker = int8(slices.Index(perm, int(id.Worker)))
		}
		out = append(out, id)
	}
	slices.SortFunc(out, CompareMoveIDs)
	return out
}

// Subset reports whether every id of a is in b (both sorted).
func Subset(a, b []MoveID) bool {
	j := 0
	for _, x := range a {
		for j < len(b) && CompareMoveIDs(b[j], x) < 0 {
			j++
		}
		if j == len(b) || b[j] != x {
			return false
		}
	}
	return true
}

// Task is a subtree to search: the decision points of its root's path,
// each at the move taken.
type Task[F any] struct{ Frames []*Frame[F] }

// Tasks share the subtrees of one search among its walkers: a walker out
// of work waits for a subtree another gives it (Walker.Donate).
type Tasks[F any] struct {
	mu    sync.Mutex
	cond  *sync.Cond
	tasks []*Task[F]
	// idle counts the walkers waiting for a task, active those searching.
	idle, active int
	over         bool
}

// NewTasks returns the tasks of a search on n walkers: the whole tree.
func NewTasks[F any](n int) *Tasks[F] {
	p := &Tasks[F]{tasks: []*Task[F]{{}}, active: n}
	p.cond = sync.NewCond(&p.mu)
	return p
}

// Next waits for a subtree to search; nil when the search is over: ended
// (End), or nobody searches and nothing is left.
func (p *Tasks[F]) Next() *Task[F] {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.active--
	for len(p.tasks) == 0 && !p.over {
		if p.active == 0 {
			p.over = true
			p.cond.Broadcast()
			break
		}
		p.idle++
		p.cond.Wait()
		p.idle--
	}
	if p.over {
		return nil
	}
	t := p.tasks[len(p.tasks)-1]
	p.tasks = p.tasks[:len(p.tasks)-1]
	p.active++
	return t
}

// End ends the search for every walker.
func (p *Tasks[F]) End() {
	p.mu.Lock()
	p.over = true
	p.cond.Broadcast()
	p.mu.Unlock()
}

// Over reports whether the search is over.
func (p *Tasks[F]) Over() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.over
}

// Walker is one walker's place in the tree: the path of decision points
// of the schedule it plays, of which those from Root down are its own to
// backtrack.
type Walker[F any] struct {
	Path []*Frame[F]
	Root int
}

// Start starts on subtree t.
func (w *Walker[F]) Start(t *Task[F]) {
	w.Path, w.Root = t.Frames, len(t.Frames)
}

// Backtrack moves the path to the next move to try in the walker's
// subtree and returns the depth of its point; false when every move of
// every point of the subtree was tried.
func (w *Walker[F]) Backtrack() (int, bool) {
	for len(w.Path) > w.Root {
		d := len(w.Path) - 1
		if w.Path[d].Next() {
			return d, true
		}
		w.Path = w.Path[:d]
	}
	return 0, false
}

// Donate gives a walker waiting for work, when one waits and no task is
// left, the untried move nearest the root of w's subtree; it returns the
// depth of its point, false when it gave none.
func (w *Walker[F]) Donate(p *Tasks[F]) (int, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.idle == 0 || len(p.tasks) > 0 {
		return 0, false
	}
	for d := w.Root; d < len(w.Path); d++ {
		if g := w.Path[d].Give(); g != nil {
			frames := make([]*Frame[F], d+1)
			copy(frames, w.Path[:d+1])
			frames[d] = g
			p.tasks = append(p.tasks, &Task[F]{Frames: frames})
			p.cond.Signal()
			return d, true
		}
	}
	return 0, false
}

// Visit is one exploration of a named state: with budget B left, the
// moves Sleep asleep (canonical), at Depth.
type Visit[B any] struct {
	Budget B
	// Depth is 32 bits, next to a small budget: a visit of the common
	// budgets takes 40 bytes, not 48.
	Depth int32
	Sleep []MoveID
}

// Cache is the depth-first search's state cache: the visits of each state
// named, in the visited set. covers reports whether one budget has at
// least what another has, in every bound.
type Cache[B any] struct {
	set    *Set
	visits [][]Visit[B]
	covers func(a, b B) bool
}

// NewCache returns an empty cache.
func NewCache[B any](covers func(a, b B) bool) *Cache[B] {
	return &Cache[B]{set: NewSet(), covers: covers}
}

// Dominated reports whether the state k was explored before with at least
// budget b and no more moves asleep than sleep.
func (c *Cache[B]) Dominated(k Key, b B, sleep []MoveID) bool {
	i, ok := c.set.Get(k)
	if !ok {
		return false
	}
	for _, v := range c.visits[i] {
		if c.covers(v.Budget, b) && Subset(v.Sleep, sleep) {
			return true
		}
	}
	return false
}

// Remember records a visit of k, dropping those it dominates (no more
// budget, no fewer moves asleep, no shallower); it reports whether the
// state is new.
func (c *Cache[B]) Remember(k Key, v Visit[B]) bool {
	i, seen := c.set.Get(k)
	if !seen {
		c.set.Put(k, int32(len(c.visits)))
		c.visits = append(c.visits, []Visit[B]{v})
		return true
	}
	old := c.visits[i]
	kept := old[:0]
	for _, o := range old {
		if !(c.covers(v.Budget, o.Budget) && Subset(v.Sleep, o.Sleep) && v.Depth <= o.Depth) {
			kept = append(kept, o)
		}
	}
	c.visits[i] = append(kept, v)
	return false
}

// Len is the number of states named.
func (c *Cache[B]) Len() int { return c.set.Len() }

// Bytes is the memory the cache holds: its set, each visit kept and its
// sleep set.
func (c *Cache[B]) Bytes() int64 {
	var v Visit[B]
	n := c.set.Bytes() + int64(cap(c.visits))*int64(unsafe.Sizeof([]Visit[B]{}))
	for _, vs := range c.visits {
		n += int64(cap(vs)) * int64(unsafe.Sizeof(v))
		for _, x := range vs {
			n += int64(cap(x.Sleep)) * int64(unsafe.Sizeof(MoveID{}))
		}
	}
	return n
}
