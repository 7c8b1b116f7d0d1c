package search

import (
	"errors"
	"sync"
	"time"
)

// The model a depth-first strategy drives. A stateless model (a team's
// consumer on a real database: its states cannot be copied, only reached
// again) is searched by replay: the strategy has the model play one
// schedule at a time from its initial state, and the model asks it, at
// every decision point, which of the moves enabled there to take (a
// Chooser). At each point the model names the moves (each with its
// footprint: what it reads and writes), the worker the schedule is on,
// the state's key and the budget left; it says when two footprints
// conflict and judges each schedule played. The strategy keeps the rest:
// the path and its replay check, the sleep sets and the preemption bound's
// soundness under them, the state cache, the counts, the walkers sharing
// subtrees, the preemption bounds searched in turn and the search for the
// shortest prefix that still breaks a law.

// What Chooser.Choose returns instead of a move's index.
const (
	// Abandon stops the schedule short: its state was explored before,
	// every move is asleep, or the model is not deterministic (Err).
	Abandon = -1
	// Cut ends the schedule at the depth bound (or the prefix length
	// searched), the model completing it its own way.
	Cut = -2
)

// Point is a decision point as a model meets it playing a schedule.
type Point[F, B any] struct {
	// Moves are the moves enabled, in the model's fixed order.
	Moves []Move[F]
	// Worker is the worker the schedule is on (-1: none) and Movable
	// whether it can move.
	Worker  int
	Movable bool
	// Key names the state (KeyOK: it could be named; a state not named
	// is never cached).
	Key   Key
	KeyOK bool
	// Budget is what the schedule may still spend from here.
	Budget B
	// Perm is the state's canonical order of its workers (see Canonical).
	Perm []int
	// BoundPruned counts the moves left out for being over the
	// preemption bound.
	BoundPruned int
	// Aux is the model's own record of the point (Frame.Aux).
	Aux any
	// CanMove reports whether worker w can move here: the strategy asks
	// it of the worker of the move taken at the point before (Frame.After).
	CanMove func(w int) bool
}

// Replayer is a stateless model: see above. Its methods are called from
// the walkers' goroutines, Play of walker i only on walker i's.
type Replayer[F, B any] interface {
	// Begin starts the search of a preemption bound (cut 0) or of the
	// prefixes of cut steps within it; it returns the budget a schedule
	// starts with.
	Begin(bound, cut int) B
	// End is told that the search Begin started is over, and what it did.
	End(l *LevelTally)
	// Play plays one schedule from the initial state on walker i's own
	// resources, asking c at every decision point.
	Play(i int, c *Chooser[F, B]) error
	// Judge judges the schedule walker i played last (the search's lock
	// held, its counts read as they are): true when it breaks a law.
	Judge(i int) bool
	// Conflicts reports whether two footprints conflict (their moves need
	// not commute).
	Conflicts(a, b F) bool
	// CostSafe is CostSafe, or what a model stands in for it.
	CostSafe(f *Frame[F], z Sleeper[F], t Move[F]) bool
	// Covers reports whether budget a has at least what b has, in every
	// bound.
	Covers(a, b B) bool
	// Diverged explains why the run playing a path again met p, not what
	// f recorded, after depth steps: the model is not deterministic.
	Diverged(f *Frame[F], p *Point[F, B], depth int) error
}

// DepthTally is what a level of a depth-first search did at one depth
// (the number of steps taken before its decision points).
type DepthTally struct {
	// Nodes are the decision points explored, States the distinct states
	// first named there, Transitions the moves tried from them.
	Nodes, States, Transitions, SleepPruned, CachePruned int64
}

// LevelTally is what one level of a depth-first search did: a preemption
// bound, or the prefixes of Cut steps within it.
type LevelTally struct {
	Bound, Cut int
	// Complete says every schedule of the level was explored.
	Complete                                                 bool
	Schedules, States, SleepPruned, CachePruned, BoundPruned int64
	Elapsed                                                  time.Duration
	// CacheBytes and CacheEntries measure the state cache once the level
	// ended.
	CacheBytes, CacheEntries int64
	Depths                   []DepthTally
}

// DFS is the depth-first strategy over a Replayer: stateless, with sleep
// sets, preemption bounding and a state cache, on Walkers walkers.
type DFS[F, B any] struct {
	Model   Replayer[F, B]
	Walkers int
	// MaxSteps cuts every schedule at this depth.
	MaxSteps int
	// NoPOR switches the sleep sets off; Exhaustive searches on past a
	// counterexample (every level of every bound, for the soundness
	// tests).
	NoPOR, Exhaustive bool
	// Budget bounds the search; its Count counts schedules.
	Budget Budget
	// Shard, when set, searches one shard of the tree only (see Shard).
	Shard *Shard

	// mu guards what follows and the cache.
	mu    sync.Mutex
	cache *Cache[B]
	tasks *Tasks[F]
	cut   int
	found bool
	err   error
	lvl   *LevelTally

	// Schedules, States and the pruned counts are the totals of every
	// level; Levels each level's, in order.
	Schedules, States, SleepPruned, CachePruned, BoundPruned int64
	Levels                                                   []LevelTally
	// Stopped says why a budget ended the search ("": none did).
	Stopped string
}

// Start starts the budget's clock.
func (s *DFS[F, B]) Start(now time.Time) { s.Budget.Start(now) }

// Bounded searches the preemption bounds from..to in turn, each level
// every schedule with at most that many preemptions, until one breaks a
// law (unless Exhaustive) or a budget runs out. It returns the last bound
// searched completely (-1: none) and whether a schedule broke a law.
func (s *DFS[F, B]) Bounded(from, to int) (explored int, found bool, err error) {
	explored = -1
	for k := from; k <= to; k++ {
		if err := s.level(k, 0, s.Walkers); err != nil {
			return explored, false, err
		}
		if s.found {
			return explored, true, nil
		}
		if s.Stopped != "" {
			break
		}
		explored = k
	}
	return explored, false, nil
}

// Shortest searches, on one walker, the prefixes of 1, 2, ... size steps
// with at most bound preemptions, each completed by the model (Cut),
// shortest first, until one breaks a law. It reports whether one did and
// whether every shorter one was tried (false: a budget ran out first; the
// search is then not said Stopped, as its bounds were searched).
func (s *DFS[F, B]) Shortest(bound, size int) (found, complete bool, err error) {
	for cut := 1; cut <= size; cut++ {
		if s.spent() != "" {
			return false, false, nil
		}
		if err := s.level(bound, cut, 1); err != nil {
			return false, false, err
		}
		if s.Stopped != "" {
			s.Stopped = ""
			return false, false, nil
		}
		if s.found {
			return true, true, nil
		}
	}
	return false, true, nil
}

// spent says why the search must stop now, if it must.
func (s *DFS[F, B]) spent() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.Budget.Reason(s.Budget.Spent(s.Schedules, 0))
}

// level searches one level on n walkers.
func (s *DFS[F, B]) level(bound, cut, n int) error {
	budget := s.Model.Begin(bound, cut)
	s.Levels = append(s.Levels, LevelTally{Bound: bound, Cut: cut})
	s.lvl = &s.Levels[len(s.Levels)-1]
	start := time.Now()
	s.cache, s.cut, s.found = NewCache(s.Model.Covers), cut, false
	s.tasks = s.shardTasks(bound, cut, n, budget)
	if s.err != nil {
		return s.err
	}
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := &Chooser[F, B]{s: s, budget: budget}
			c.walk(i)
		}()
	}
	wg.Wait()
	s.lvl.Elapsed = time.Since(start)
	s.lvl.CacheBytes, s.lvl.CacheEntries = s.cache.Bytes(), int64(s.cache.Len())
	if s.err != nil {
		return s.err
	}
	s.lvl.Complete = s.Stopped == "" && (!s.found || s.Exhaustive)
	s.Model.End(s.lvl)
	if s.Exhaustive {
		s.found = false
	}
	return nil
}

// Chooser is one walker of a DFS: the path of the schedule it plays, which
// the model asks at every decision point.
type Chooser[F, B any] struct {
	Walker[F]
	s      *DFS[F, B]
	budget B
	depth  int
}

// Budget is what a schedule of the level starts with.
func (c *Chooser[F, B]) Budget() B { return c.budget }

// Replaying reports whether the decision point the model meets next is on
// the path's prefix: a point a schedule before met, checked and not
// explored again.
func (c *Chooser[F, B]) Replaying() bool { return c.depth < len(c.Path) }

// walk plays schedules of the level's subtrees until the level is over.
func (c *Chooser[F, B]) walk(i int) {
	s := c.s
	for {
		t := s.tasks.Next()
		if t == nil {
			return
		}
		c.Start(t)
		for {
			if c.halt() {
				return
			}
			c.depth = 0
			if err := s.Model.Play(i, c); err != nil {
				c.Fail(err)
				s.tasks.End()
				return
			}
			s.mu.Lock()
			if s.err == nil {
				s.Schedules++
				s.lvl.Schedules++
				if s.Model.Judge(i) {
					s.found = true
				}
			}
			s.mu.Unlock()
			if d, ok := c.Donate(s.tasks); ok {
				c.transition(d)
			}
			d, ok := c.Backtrack()
			if !ok {
				break
			}
			c.transition(d)
		}
	}
}

// transition counts a move tried at depth d.
func (c *Chooser[F, B]) transition(d int) {
	c.s.mu.Lock()
	c.s.row(d).Transitions++
	c.s.mu.Unlock()
}

// halt reports whether the walker must stop: the level is over, a budget
// is spent, a schedule broke a law, the search failed.
func (c *Chooser[F, B]) halt() bool {
	s := c.s
	s.mu.Lock()
	over := s.tasks.Over() || s.err != nil || (s.found && !s.Exhaustive)
	if !over {
		if why := s.Budget.Reason(s.Budget.Spent(s.Schedules, 0)); why != "" {
			s.Stopped, over = why, true
		}
	}
	s.mu.Unlock()
	if over {
		s.tasks.End()
	}
	return over
}

// Fail ends the search with err: the model could not go on.
func (c *Chooser[F, B]) Fail(err error) {
	c.s.mu.Lock()
	defer c.s.mu.Unlock()
	if c.s.err == nil {
		c.s.err = err
	}
}

// row is the level's tally of depth d (s.mu held).
func (s *DFS[F, B]) row(d int) *DepthTally {
	for len(s.lvl.Depths) <= d {
		s.lvl.Depths = append(s.lvl.Depths, DepthTally{})
	}
	return &s.lvl.Depths[d]
}

// errDiverged stands in for a model that explains no divergence.
var errDiverged = errors.New("search: the same path, played again, met another decision point")

// Choose returns the index of the move to take at p, Abandon or Cut. On
// the path's prefix it takes the move the path took, once it checked the
// run met the same point; past it, it opens a new decision point: the
// sleep set it inherits, the state cache, the counts.
func (c *Chooser[F, B]) Choose(p *Point[F, B]) int {
	d := c.depth
	s := c.s
	if d < len(c.Path) {
		f := c.Path[d]
		if !sameMoves(f.Moves, p.Moves) || (f.KeyOK && p.KeyOK && f.Key != p.Key) {
			err := s.Model.Diverged(f, p, d)
			if err == nil {
				err = errDiverged
			}
			c.Fail(err)
			return Abandon
		}
		c.depth++
		return f.Cur
	}
	if d > 0 {
		parent := c.Path[d-1]
		if w := int(parent.Moves[parent.Cur].ID.Worker); w >= 0 && p.CanMove(w) {
			parent.After[parent.Cur] = 1
		} else {
			parent.After[parent.Cur] = 0
		}
	}
	if d >= s.MaxSteps || (s.cut > 0 && d >= s.cut) {
		return Cut
	}
	var sleep []Sleeper[F]
	if d > 0 && !s.NoPOR {
		sleep = c.Path[d-1].ChildSleep(s.Model.Conflicts, s.Model.CostSafe)
	}
	cached := p.KeyOK && s.cut == 0
	var canon []MoveID
	if cached {
		canon = Canonical(sleep, p.Perm)
	}
	s.mu.Lock()
	row := s.row(d)
	row.Nodes++
	if cached {
		if s.cache.Dominated(p.Key, p.Budget, canon) {
			s.CachePruned++
			s.lvl.CachePruned++
			row.CachePruned++
			s.mu.Unlock()
			return Abandon
		}
		if s.cache.Remember(p.Key, Visit[B]{Budget: p.Budget, Sleep: canon, Depth: int32(d)}) {
			s.States++
			s.lvl.States++
			row.States++
		}
	}
	s.BoundPruned += int64(p.BoundPruned)
	s.lvl.BoundPruned += int64(p.BoundPruned)
	f, asleep := NewFrame(p.Moves, sleep, p.Worker, p.Movable, p.Key, p.KeyOK, p.Aux)
	s.SleepPruned += int64(asleep)
	s.lvl.SleepPruned += int64(asleep)
	row.SleepPruned += int64(asleep)
	if f.Cur >= 0 {
		row.Transitions++
	}
	s.mu.Unlock()
	if f.Cur < 0 {
		return Abandon
	}
	c.Path = append(c.Path, f)
	c.depth++
	return f.Cur
}

func sameMoves[F any](a, b []Move[F]) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].ID != b[i].ID {
			return false
		}
	}
	return true
}
