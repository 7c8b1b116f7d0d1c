package search

import (
	"context"
	"testing"
)

// numbers is a model for the breadth-first search: the states are the
// numbers below mod, the moves add one and double; a state equal to bad
// breaks a law.
type numbers struct {
	mod, bad int
	frontier []int
	next     []int
	closed   []int
}

type numberMove struct {
	Edge
	n int
}

func (m *numberMove) Head() *Edge { return &m.Edge }

func (x *numbers) Expand(d, lo, hi int) ([]*numberMove, int64, error) {
	var out []*numberMove
	for p := lo; p < hi; p++ {
		for mv, n := range []int{(x.frontier[p] + 1) % x.mod, x.frontier[p] * 2 % x.mod} {
			m := &numberMove{Edge: Edge{Parent: int32(p), Move: int16(mv), Key: Key{uint64(n), 7}}, n: n}
			m.SelfLoop = n == x.frontier[p]
			out = append(out, m)
		}
	}
	return out, int64(len(out)), nil
}

func (x *numbers) Keep(m *numberMove, _ int) { x.next = append(x.next, m.n) }
func (x *numbers) Drop(*numberMove)          {}
func (x *numbers) Closed(d int) {
	x.frontier, x.next = x.next, nil
	x.closed = append(x.closed, d)
}

func (x *numbers) Judge(ms []*numberMove, _ int) bool {
	for _, m := range ms {
		if m.n == x.bad {
			return true
		}
	}
	return false
}

// TestBFSReachesEveryStateOnce searches the numbers below 100 from 1:
// every number is reached once, at its shortest distance, and the search
// ends when a depth adds nothing.
func TestBFSReachesEveryStateOnce(t *testing.T) {
	x := &numbers{mod: 100, bad: -1, frontier: []int{1}}
	b := &BFS{MaxDepth: 50, Batch: 3}
	if err := Run(b, x, &numberMove{Edge: Edge{Key: Key{1, 7}}, n: 1}); err != nil {
		t.Fatal(err)
	}
	// 0 is 1+99 or 50*2: reachable; every number is.
	if b.States != 100 || b.Visited.Len() != 100 {
		t.Fatalf("%d states, %d visited; want 100", b.States, b.Visited.Len())
	}
	if b.Depth != 50 || b.Stopped != Unbound {
		t.Fatalf("depth %d, stopped %v; want the whole bound searched", b.Depth, b.Stopped)
	}
	last := b.Levels[len(b.Levels)-1]
	if last.States != 0 || len(x.closed) != last.Depth {
		t.Fatalf("the last level %+v adds states, or depths %v were not closed in turn", last, x.closed)
	}
	sum := 0
	for _, l := range b.Levels {
		sum += l.States
	}
	if sum != 100 {
		t.Fatalf("the levels add %d states", sum)
	}
}

// TestBFSStopsAtShortestBreach finds 37 at its shortest depth: 1, 2, 4,
// 8, 9, 18, 36, 37 is seven moves, and no shorter path reaches it.
func TestBFSStopsAtShortestBreach(t *testing.T) {
	x := &numbers{mod: 1000, bad: 37, frontier: []int{1}}
	b := &BFS{MaxDepth: 20, Batch: 1}
	if err := Run(b, x, &numberMove{Edge: Edge{Key: Key{1, 7}}, n: 1}); err != nil {
		t.Fatal(err)
	}
	if got := b.Levels[len(b.Levels)-1].Depth; got != 7 || b.Depth != 6 {
		t.Fatalf("breach at depth %d after %d complete; want 7 after 6", got, b.Depth)
	}
	// The batch after the breach was expanded and merged while the breach
	// was judged: the figures are those of the search up to the breach.
	var states, transitions int64
	for _, l := range b.Levels {
		states += int64(l.States)
		transitions += l.Transitions
	}
	if states != b.States || transitions != b.Transitions {
		t.Fatalf("the levels add %d states, %d transitions; the search reports %d, %d", states, transitions, b.States, b.Transitions)
	}
	if b.States >= int64(b.Visited.Len()) {
		t.Fatalf("%d states reported, %d visited: the batch after the breach was not merged beside its judging", b.States, b.Visited.Len())
	}
}

// TestBFSBudgetEndsTheSearch ends a search on its count and its context.
func TestBFSBudgetEndsTheSearch(t *testing.T) {
	x := &numbers{mod: 1 << 20, bad: -1, frontier: []int{1}}
	b := &BFS{MaxDepth: 100, Batch: 4, Budget: &Budget{Count: 50}}
	if err := Run(b, x, &numberMove{Edge: Edge{Key: Key{1, 7}}, n: 1}); err != nil {
		t.Fatal(err)
	}
	if b.Stopped != OutOfCount || b.States < 50 || b.Depth >= 100 {
		t.Fatalf("stopped %v at %d states, depth %d", b.Stopped, b.States, b.Depth)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	x = &numbers{mod: 1 << 20, bad: -1, frontier: []int{1}}
	b = &BFS{MaxDepth: 100, Batch: 4, Budget: &Budget{Context: ctx}}
	if err := Run(b, x, &numberMove{Edge: Edge{Key: Key{1, 7}}, n: 1}); err != nil {
		t.Fatal(err)
	}
	if b.Stopped != Interrupted || b.Depth != 0 {
		t.Fatalf("stopped %v at depth %d; want interrupted before depth 1", b.Stopped, b.Depth)
	}
}

// TestParallelCallsEachIndexOnce runs a sum on several goroutines.
func TestParallelCallsEachIndexOnce(t *testing.T) {
	seen := make([]int, 1000)
	Parallel(4, len(seen), func() *int { return new(int) }, func(*int) {}, func(x *int, i int) { seen[i]++ })
	for i, n := range seen {
		if n != 1 {
			t.Fatalf("index %d called %d times", i, n)
		}
	}
}
