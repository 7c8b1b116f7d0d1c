package search

import (
	"sync"
	"sync/atomic"
	"time"
)

// Node is a distinct state a breadth-first search keeps: its parent at the
// depth before, the move that led to it, and the moves the partial-order
// reduction skips from it (a bit per move of a menu of at most 64).
type Node struct {
	Parent int32
	Move   int16
	Skip   uint64
}

// Edge is the part of a transition the breadth-first search merges: from
// the state Parent of the depth expanded, by Move, into the state Key,
// whose moves Skip need not be taken.
type Edge struct {
	Parent int32
	Move   int16
	Key    Key
	Skip   uint64
	// Broken marks a transition that broke a law on the way: it is judged
	// whatever state it reached.
	Broken bool
	// SelfLoop marks a move that leaves its parent's state as it is: it
	// is counted, never merged.
	SelfLoop bool
	// New is the merge's verdict: the transition reached a state not
	// visited before.
	New bool
}

// Transition is an engine's transition, which carries its Edge (Head).
type Transition interface {
	Head() *Edge
}

// Expander builds and judges the states of a breadth-first search; the
// search merges them.
type Expander[T Transition] interface {
	// Expand takes every move from the states lo..hi-1 of depth d-1 and
	// returns the transitions, in a fixed order, and how many moves it
	// took (those it dropped as known included).
	Expand(d, lo, hi int) ([]T, int64, error)
	// Keep is told, in order, of each transition into a new state of
	// depth d; Drop of each into a known one.
	Keep(t T, d int)
	Drop(t T)
	// Judge judges, in order, the transitions into new states and those
	// that broke a law; it reports whether one breaks a law, which ends
	// the search. It runs beside the Expand, Keep and Drop calls of the
	// next batch of the same depth (never beside another Judge), so that
	// the judging of a batch keeps the cores busy while the next one is
	// merged on one of them.
	Judge(ts []T, d int) bool
	// Closed is told that depth d is complete.
	Closed(d int)
}

// Level is what one depth of a breadth-first search added.
type Level struct {
	Depth int `json:"depth"`
	// States is the number of distinct states first reached at this depth
	// (the frontier expanded into the next depth).
	States int `json:"states"`
	// Transitions is the number of steps executed into this depth.
	Transitions int64 `json:"transitions"`
}

// Progress is the state of a running breadth-first search.
type Progress struct {
	Depth       int // the depth being expanded into
	States      int64
	Transitions int64
	Frontier    int // states of the depth being expanded from
	Done        int // of which expanded
	Elapsed     time.Duration
}

// BFS is a breadth-first search by depth: each depth's frontier is
// expanded a batch of states at a time (by the Expander, on every core)
// and merged in a fixed order, so that a search is deterministic, its
// states deduplicated by their keys and its counterexamples shortest.
// States are kept as Nodes, a parent link each.
type BFS struct {
	// MaxDepth is the deepest depth searched; Batch the states expanded
	// between two merges.
	MaxDepth, Batch int
	// NoDedup searches the tree: every transition reaches a new state.
	NoDedup bool
	// Symmetric says that keys fold states by symmetry: a state reached
	// again at its depth by another edge may be a permutation of the one
	// first reached, whose skip set names other moves, so it skips none.
	Symmetric bool
	// Budget, when set, is checked before every batch (its clock started
	// at Start); a bound reached ends the search, Stopped.
	Budget *Budget
	// Progress, when set, is called after every batch.
	Progress func(Progress)
	// Start is when the search started (zero: when Run is called).
	Start time.Time

	// Visited is every state reached; Nodes the states of each depth.
	Visited *Set
	Nodes   [][]Node
	// next indexes the states of the depth being built into Nodes.
	next *Set
	// last is set while the deepest depth, MaxDepth, is built: see
	// startDepth.
	last bool
	// keys are a batch's keys being warmed (warmMerge); warm keeps what
	// Warm read.
	keys []Key
	warm uint64

	// Depth is the deepest depth fully searched; States the distinct
	// states reached (those of a depth cut short too); Transitions the
	// moves taken; Levels each depth's.
	Depth       int
	States      int64
	Transitions int64
	Levels      []Level
	// Stopped is the bound that ended the search early (Unbound: none).
	Stopped Bound
	// Skipped counts the moves a Stepper's search did not take for its
	// skip sets (an Expander counts its own).
	Skipped int64
}

// Bytes is the memory of the visited set and the parent links.
func (b *BFS) Bytes() int64 {
	n := int64(0)
	for _, l := range b.Nodes {
		n += int64(cap(l))
	}
	return b.Visited.Bytes() + n*16
}

// Known reports whether a transition into k may be dropped before the
// merge: its state was visited, and not first at the depth being built
// (where the merge intersects the skip sets of every edge into it) unless
// the skip sets are not kept (noPOR). It may run beside other calls of
// Known, never beside the merge.
func (b *BFS) Known(k Key, noPOR bool) bool {
	if !b.Visited.Has(k) {
		return false
	}
	if noPOR || b.last {
		return true
	}
	_, thisDepth := b.next.Get(k)
	return !thisDepth
}

// Run searches from root, a transition into the initial state.
func Run[T Transition](b *BFS, x Expander[T], root T) error {
	if b.Visited == nil {
		b.Visited = NewSet()
	}
	if b.Start.IsZero() {
		b.Start = time.Now()
	}
	if b.Budget != nil {
		b.Budget.Start(b.Start)
	}
	re := root.Head()
	re.New = true
	b.Visited.Add(re.Key)
	b.Nodes = append(b.Nodes, []Node{{Parent: -1, Move: -1, Skip: re.Skip}})
	b.States = 1
	b.Levels = append(b.Levels, Level{Depth: 0, States: 1})
	if x.Judge([]T{root}, 0) {
		return nil
	}
	defer b.endDepth()
	for d := 1; d <= b.MaxDepth; d++ {
		from := len(b.Nodes[d-1])
		var next []Node
		n := 0 // the new states of depth d, kept in next but at the deepest depth
		b.startDepth(d)
		lvl := Level{Depth: d}
		var j judging // the batch before, judged beside this one's expansion and merge
		for lo := 0; lo < from; lo += b.Batch {
			if b.Budget != nil {
				if k := b.Budget.Spent(b.States+int64(n), b.Bytes()+b.buildingBytes()); k != Unbound {
					if j.broke() {
						b.recordBroken(j)
						return nil
					}
					b.Stopped = k
					b.States += int64(n)
					return nil
				}
			}
			hi := min(lo+b.Batch, from)
			ts, taken, err := x.Expand(d, lo, hi)
			if err != nil {
				if j.broke() {
					b.recordBroken(j)
					return nil
				}
				return err
			}
			lvl.Transitions += taken
			b.Transitions += taken
			warmMerge(b, ts)
			var fresh []T
			for _, t := range ts {
				e := t.Head()
				switch {
				case e.SelfLoop:
				case e.Broken:
					fresh = append(fresh, t) // judged whatever the state
				default:
					if e.New = b.admit(e, next); e.New {
						n++
						if !b.last {
							next = append(next, Node{Parent: e.Parent, Move: e.Move, Skip: e.Skip})
						}
						x.Keep(t, d)
						fresh = append(fresh, t)
					} else {
						x.Drop(t)
					}
				}
			}
			if j.broke() {
				b.recordBroken(j)
				return nil
			}
			done := make(chan bool, 1)
			j = judging{lvl: lvl, n: n, transitions: b.Transitions, done: done}
			go func() { done <- x.Judge(fresh, d) }()
			if b.Progress != nil {
				b.Progress(Progress{Depth: d, States: b.States + int64(n), Transitions: b.Transitions,
					Frontier: from, Done: hi, Elapsed: time.Since(b.Start)})
			}
		}
		if j.broke() {
			b.recordBroken(j)
			return nil
		}
		b.record(lvl, n)
		b.Nodes = append(b.Nodes, next)
		b.Depth = d
		b.endDepth()
		x.Closed(d)
		if n == 0 {
			// Nothing new: every deeper schedule only revisits.
			b.Depth = b.MaxDepth
			break
		}
	}
	return nil
}

// judging is a batch being judged: the depth, its new states and the
// search's transitions as they were once the batch was merged, which are
// what the search reports if the batch breaks a law (the batch after it,
// expanded and merged meanwhile, is not counted).
type judging struct {
	lvl         Level
	n           int
	transitions int64
	done        chan bool // Judge's verdict; nil: no batch
}

// broke waits for the batch's verdict and reports whether it breaks a
// law; j holds no batch afterwards.
func (j *judging) broke() bool {
	if j.done == nil {
		return false
	}
	broke := <-j.done
	j.done = nil
	return broke
}

// recordBroken records the depth being built as it was once j, which
// broke a law, was merged.
func (b *BFS) recordBroken(j judging) {
	b.Transitions = j.transitions
	b.record(j.lvl, j.n)
}

// warmMerge readies the lookups of the merge of ts (see Warm): the keys
// Known looked up during the expansion have left the cache since, and the
// merge, on one core, would wait for each miss in turn.
func warmMerge[T Transition](b *BFS, ts []T) {
	if b.NoDedup {
		return
	}
	ks := b.keys[:0]
	for _, t := range ts {
		if e := t.Head(); !e.SelfLoop && !e.Broken {
			ks = append(ks, e.Key)
		}
	}
	b.keys = ks
	b.warm += b.Warm(ks)
}

// record records depth lvl, as far as it went, which reached n new states.
func (b *BFS) record(lvl Level, n int) {
	lvl.States = n
	b.States += int64(n)
	b.Levels = append(b.Levels, lvl)
}

// admit decides whether the transition e reaches a new state of the depth
// whose states so far are next; the caller appends it when it does. A
// state reached again at its depth keeps only the skips every edge into
// it allows (none under symmetry: see BFS.Symmetric).
func (b *BFS) admit(e *Edge, next []Node) bool {
	if b.NoDedup {
		return true
	}
	if b.last {
		return b.Visited.Add(e.Key)
	}
	if j, ok := b.next.Get(e.Key); ok {
		if b.Symmetric {
			next[j].Skip = 0
		} else {
			next[j].Skip &= e.Skip
		}
		return false
	}
	if !b.Visited.Add(e.Key) {
		return false
	}
	b.next.Put(e.Key, int32(len(next)))
	return true
}

// Parallel calls f(x, i) for every i in 0..n-1 on up to par goroutines,
// each with scratch x from get, handed back to put when it is done (nil
// get and put: x is X's zero value).
func Parallel[X any](par, n int, get func() X, put func(X), f func(x X, i int)) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(par, n) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var x X
			if get != nil {
				x = get()
			}
			if put != nil {
				defer put(x)
			}
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				f(x, i)
			}
		}()
	}
	wg.Wait()
}
