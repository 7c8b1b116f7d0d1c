package search

import (
	"slices"
	"sync"
	"testing"
)

// res is a footprint of the tests: the resources a move touches.
type res uint8

func overlap(a, b res) bool { return a&b != 0 }

func mv(kind uint8, w int8, fp res) Move[res] {
	return Move[res]{ID: MoveID{Kind: kind, Worker: w}, Footprint: fp, Own: w >= 0}
}

// TestFrameTriesEveryMoveAwakeOnce walks a frame's moves by Next and Give
// together: each move awake is tried once, asleep ones never (the frame
// given is its taker's root, which it never backtracks).
func TestFrameTriesEveryMoveAwakeOnce(t *testing.T) {
	moves := []Move[res]{mv(1, 0, 1), mv(1, 1, 2), mv(1, 2, 4), mv(2, -1, 8)}
	f, asleep := NewFrame(moves, []Sleeper[res]{{Move: moves[0]}}, 0, true, Key{1, 2}, true, "aux")
	if asleep != 1 || f.Cur != 1 {
		t.Fatalf("%d asleep, first move %d; want 1 and 1", asleep, f.Cur)
	}
	tried := []int{f.Cur}
	g := f.Give()
	if g == nil || g.Cur != 2 || !f.Tried[2] || !g.Tried[2] || g.Aux != "aux" {
		t.Fatalf("Give handed %+v", g)
	}
	tried = append(tried, g.Cur)
	for f.Next() {
		tried = append(tried, f.Cur)
	}
	slices.Sort(tried)
	if !slices.Equal(tried, []int{1, 2, 3}) {
		t.Fatalf("tried %v; want 1, 2, 3 once each", tried)
	}
	if f.Give() != nil {
		t.Fatal("a frame with every move tried gave one")
	}
}

// TestChildSleepKeepsWhatCommutes: below the third move, the two tried
// before it sleep when they commute with it, and a move asleep above
// stays asleep when it does.
func TestChildSleepKeepsWhatCommutes(t *testing.T) {
	moves := []Move[res]{mv(1, 0, 1), mv(1, 1, 2), mv(1, 2, 1|4), mv(2, -1, 16)}
	f, _ := NewFrame(moves, []Sleeper[res]{{Move: moves[3], After: -1}}, -1, false, Key{}, false, nil)
	f.Cur = 2
	// Neither worker of the moves tried could move after them.
	f.After[0], f.After[1] = 0, 0
	var ids []MoveID
	for _, z := range f.ChildSleep(overlap, CostSafe[res]) {
		ids = append(ids, z.ID)
	}
	// moves[0] touches what moves[2] does; moves[1] and moves[3] do not.
	want := []MoveID{moves[3].ID, moves[1].ID}
	if !slices.Equal(ids, want) {
		t.Fatalf("child sleep %v; want %v", ids, want)
	}
	// Whose worker may still move after it, moves[1] first could cost a
	// preemption the order it stands for does not: it stays awake.
	f.After[1] = -1
	if got := f.ChildSleep(overlap, CostSafe[res]); len(got) != 1 || got[0].ID != moves[3].ID {
		t.Fatalf("child sleep %v; want only the move asleep above", got)
	}
	if got := f.ChildSleep(func(res, res) bool { return true }, CostSafe[res]); len(got) != 0 {
		t.Fatalf("nothing commutes, yet %v sleep", got)
	}
}

// TestCostSafe: a move of another worker may sleep below a move of the
// worker the schedule is on only when trying it first costs no more
// preemptions.
func TestCostSafe(t *testing.T) {
	f := &Frame[res]{Worker: 0, Movable: true}
	own0, own1 := mv(1, 0, 0), mv(1, 1, 0)
	crash0 := Move[res]{ID: MoveID{Kind: 3, Worker: 0}, Crash: true}
	for _, c := range []struct {
		name string
		z    Sleeper[res]
		t    Move[res]
		want bool
	}{
		{"switching first costs one more", Sleeper[res]{Move: own1, After: 0}, own0, false},
		{"staying first costs none", Sleeper[res]{Move: own0, After: 0}, own1, true},
		{"an unknown after counts as movable", Sleeper[res]{Move: own0, After: -1}, own1, true},
		{"a crash of the current worker frees the switch", Sleeper[res]{Move: own1, After: 0}, crash0, false},
		{"no worker's own move costs nothing", Sleeper[res]{Move: crash0}, own1, true},
	} {
		if got := CostSafe(f, c.z, c.t); got != c.want {
			t.Errorf("%s: CostSafe = %v", c.name, got)
		}
	}
	if !CostSafe(&Frame[res]{Worker: 0, Movable: false}, Sleeper[res]{Move: own1, After: 0}, own0) {
		t.Error("switching from a worker that cannot move costs nothing, yet the move may not sleep")
	}
}

// TestCacheDominance: a state is pruned when explored before with at
// least the budget and no more moves asleep; a visit that dominates
// another replaces it.
func TestCacheDominance(t *testing.T) {
	covers := func(a, b [2]int16) bool { return a[0] >= b[0] && a[1] >= b[1] }
	c := NewCache(covers)
	k := Key{9, 9}
	a, b := MoveID{Kind: 1}, MoveID{Kind: 2, Worker: 1}
	if !c.Remember(k, Visit[[2]int16]{Budget: [2]int16{1, 1}, Sleep: []MoveID{a}, Depth: 3}) {
		t.Fatal("a first visit is not new")
	}
	for _, q := range []struct {
		budget [2]int16
		sleep  []MoveID
		want   bool
	}{
		{[2]int16{1, 1}, []MoveID{a}, true},
		{[2]int16{0, 1}, []MoveID{a, b}, true},
		{[2]int16{2, 1}, []MoveID{a}, false},
		{[2]int16{1, 1}, nil, false},
		{[2]int16{1, 1}, []MoveID{b}, false},
	} {
		if got := c.Dominated(k, q.budget, q.sleep); got != q.want {
			t.Errorf("Dominated(%v, %v) = %v", q.budget, q.sleep, got)
		}
	}
	if c.Remember(k, Visit[[2]int16]{Budget: [2]int16{2, 2}, Depth: 1}) || len(c.visits[0]) != 1 || c.Len() != 1 {
		t.Fatalf("a dominating visit did not replace the first: %+v", c.visits)
	}
	if c.Dominated(Key{1}, [2]int16{}, nil) {
		t.Fatal("a state never visited is dominated")
	}
	if c.Bytes() <= c.set.Bytes() {
		t.Fatalf("the cache's %d bytes leave out its visits", c.Bytes())
	}
}

// TestCanonicalSleep renames workers by the state's order and sorts.
func TestCanonicalSleep(t *testing.T) {
	sleep := []Sleeper[res]{{Move: mv(1, 1, 0)}, {Move: mv(1, 0, 0)}, {Move: mv(0, -1, 0)}}
	got := Canonical(sleep, []int{1, 0})
	want := []MoveID{{Kind: 0, Worker: -1}, {Kind: 1, Worker: 0}, {Kind: 1, Worker: 1}}
	if !slices.Equal(got, want) {
		t.Fatalf("Canonical = %v; want %v", got, want)
	}
	if !Subset(want[1:], want) || Subset(want, want[1:]) {
		t.Fatal("Subset is wrong about sorted sets")
	}
}

// TestWalkersShareTheTree searches a tree of three moves at each of four
// depths on three walkers that give each other subtrees: every schedule
// is played to its end exactly once.
func TestWalkersShareTheTree(t *testing.T) {
	const width, depth, n = 3, 4, 3
	tasks := NewTasks[res](n)
	var mu sync.Mutex
	played := map[[depth]int]int{}
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var w Walker[res]
			for {
				task := tasks.Next()
				if task == nil {
					return
				}
				w.Start(task)
				for {
					// Play one schedule: the path's choices, then the
					// first move of every new point.
					var leaf [depth]int
					for d := range depth {
						if d == len(w.Path) {
							moves := make([]Move[res], width)
							for i := range moves {
								moves[i] = mv(1, int8(i), 0)
							}
							f, _ := NewFrame(moves, nil, -1, false, Key{}, false, nil)
							w.Path = append(w.Path, f)
						}
						leaf[d] = w.Path[d].Cur
					}
					mu.Lock()
					played[leaf]++
					mu.Unlock()
					w.Donate(tasks)
					if _, ok := w.Backtrack(); !ok {
						break
					}
				}
			}
		}()
	}
	wg.Wait()
	if len(played) != 81 {
		t.Fatalf("%d schedules played; want 3^4 = 81", len(played))
	}
	for leaf, k := range played {
		if k != 1 {
			t.Fatalf("%v played %d times", leaf, k)
		}
	}
	if !tasks.Over() {
		t.Fatal("the tasks are not over once every walker returned")
	}
}
