package search

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

// twoWorkers is a small stateless model: two workers of two steps each,
// every step touching res[w]; a switch away from a worker that could
// still move costs a preemption. A schedule is the order of its steps
// ("0110"); a cut schedule is completed by worker 0's steps, then 1's.
type twoWorkers struct {
	res  [2]uint8
	keys bool
	bad  string
	// drift adds a move on every play after the first: a model that is
	// not deterministic.
	drift bool
	plays int
	// steps is each worker's number of steps (zero: 2).
	steps int

	last    string
	outcome map[string]bool
	// lastPath is the path of the schedule played last.
	lastPath []int
}

func (m *twoWorkers) Begin(bound, cut int) int { return bound }
func (m *twoWorkers) End(*LevelTally)          {}
func (m *twoWorkers) Conflicts(a, b uint8) bool {
	return a&b != 0
}
func (m *twoWorkers) CostSafe(f *Frame[uint8], z Sleeper[uint8], t Move[uint8]) bool {
	return CostSafe(f, z, t)
}
func (m *twoWorkers) Covers(a, b int) bool { return a >= b }
func (m *twoWorkers) Diverged(f *Frame[uint8], p *Point[uint8, int], depth int) error {
	return errors.New("drifted")
}

func (m *twoWorkers) n() int {
	if m.steps == 0 {
		return 2
	}
	return m.steps
}

func (m *twoWorkers) Play(_ int, c *Chooser[uint8, int]) error {
	var done [2]int
	n := m.n()
	cur, budget := -1, c.Budget()
	var order strings.Builder
	m.plays++
	for {
		var moves []Move[uint8]
		pruned := 0
		for w := range 2 {
			if done[w] == n {
				continue
			}
			if cur >= 0 && cur != w && done[cur] < n && budget == 0 {
				pruned++
				continue
			}
			moves = append(moves, Move[uint8]{ID: MoveID{Worker: int8(w)}, Footprint: m.res[w], Own: true})
		}
		if m.drift && m.plays > 1 && len(moves) > 0 {
			moves = append(moves, Move[uint8]{ID: MoveID{Kind: 1, Worker: -1}})
		}
		if len(moves) == 0 {
			break
		}
		p := &Point[uint8, int]{Moves: moves, Worker: cur, Movable: cur >= 0 && done[cur] < n, Budget: budget,
			Key: Key{uint64(done[0]*(n+1) + done[1]), uint64(cur + 1)}, KeyOK: m.keys, Perm: []int{0, 1},
			BoundPruned: pruned, CanMove: func(w int) bool { return done[w] < n }}
		i := c.Choose(p)
		if i == Abandon {
			m.last = ""
			return nil
		}
		if i == Cut {
			for w := range 2 {
				for ; done[w] < n; done[w]++ {
					order.WriteByte(byte('0' + w))
				}
			}
			break
		}
		w := int(moves[i].ID.Worker)
		if cur >= 0 && cur != w && done[cur] < n {
			budget--
		}
		cur = w
		done[w]++
		order.WriteByte(byte('0' + w))
	}
	m.last, m.lastPath = order.String(), c.PathNow()
	return nil
}

func (m *twoWorkers) Judge(int) bool {
	if m.last == "" {
		return false
	}
	if m.outcome == nil {
		m.outcome = map[string]bool{}
	}
	m.outcome[m.last] = true
	return m.last == m.bad
}

func newDFS(m *twoWorkers, noPOR bool) *DFS[uint8, int] {
	return &DFS[uint8, int]{Model: m, Walkers: 1, MaxSteps: 10, NoPOR: noPOR}
}

// TestDFSCountsEveryScheduleWithinEachBound: without reductions, bound k
// plays every order of the steps with at most k preemptions.
func TestDFSCountsEveryScheduleWithinEachBound(t *testing.T) {
	m := &twoWorkers{res: [2]uint8{1, 1}}
	s := newDFS(m, true)
	explored, found, err := s.Bounded(0, 2)
	if err != nil || found || explored != 2 {
		t.Fatalf("Bounded = %d, %v, %v", explored, found, err)
	}
	var got []int64
	for _, l := range s.Levels {
		got = append(got, l.Schedules)
		if !l.Complete {
			t.Errorf("level %d not complete", l.Bound)
		}
	}
	if !slices.Equal(got, []int64{2, 4, 6}) || s.Schedules != 12 {
		t.Errorf("schedules per bound %v (total %d), want [2 4 6] (12)", got, s.Schedules)
	}
	if s.BoundPruned == 0 {
		t.Error("no choice counted as over the bound")
	}
	if len(m.outcome) != 6 {
		t.Errorf("%d orders played, want 6", len(m.outcome))
	}
}

// TestDFSSleepSetsPruneOnlyCommutingOrders: steps on different resources
// commute, and the sleep sets play fewer orders; on one resource they
// play them all.
func TestDFSSleepSetsPruneOnlyCommutingOrders(t *testing.T) {
	m := &twoWorkers{res: [2]uint8{1, 2}}
	s := newDFS(m, false)
	if _, _, err := s.Bounded(2, 2); err != nil {
		t.Fatal(err)
	}
	if s.Schedules >= 6 || s.SleepPruned == 0 {
		t.Errorf("commuting steps: %d schedules, %d pruned; want fewer than 6 and some pruned", s.Schedules, s.SleepPruned)
	}
	m = &twoWorkers{res: [2]uint8{1, 1}}
	s = newDFS(m, false)
	if _, _, err := s.Bounded(2, 2); err != nil {
		t.Fatal(err)
	}
	if s.Schedules != 6 || len(m.outcome) != 6 {
		t.Errorf("conflicting steps: %d schedules, %d orders; want 6 and 6", s.Schedules, len(m.outcome))
	}
}

// TestDFSCacheNamesEachStateOnce: with keys, a state met again with no
// more budget is not explored again.
func TestDFSCacheNamesEachStateOnce(t *testing.T) {
	m := &twoWorkers{res: [2]uint8{1, 1}, keys: true}
	s := newDFS(m, true)
	if _, _, err := s.Bounded(2, 2); err != nil {
		t.Fatal(err)
	}
	if s.CachePruned == 0 {
		t.Error("no state pruned by the cache")
	}
	// The states are the steps done by each worker and the worker the
	// schedule is on: (0,0) on none, then at most two per pair.
	if s.States == 0 || s.States > 17 || s.Levels[0].CacheEntries != s.States {
		t.Errorf("%d states named, %d cached", s.States, s.Levels[0].CacheEntries)
	}
}

// TestDFSStopsAtTheFewestPreemptions: the bounds are searched in turn, so
// the order that breaks the law is found at the bound it needs.
func TestDFSStopsAtTheFewestPreemptions(t *testing.T) {
	m := &twoWorkers{res: [2]uint8{1, 1}, bad: "0101"}
	s := newDFS(m, true)
	explored, found, err := s.Bounded(0, 3)
	if err != nil || !found || explored != 1 {
		t.Fatalf("Bounded = %d, %v, %v; want 1, true", explored, found, err)
	}
	if last := s.Levels[len(s.Levels)-1]; last.Bound != 2 || last.Complete {
		t.Errorf("last level %+v, want bound 2 not complete", last)
	}
	found, complete, err := s.Shortest(2, 4)
	if err != nil || !found || !complete {
		t.Fatalf("Shortest = %v, %v, %v", found, complete, err)
	}
	// "01" completed by worker 0, then 1, is the first prefix that breaks
	// it.
	if last := s.Levels[len(s.Levels)-1]; last.Cut != 2 || last.CacheEntries != 0 {
		t.Errorf("found at %+v, want the prefixes of 2 steps, uncached", last)
	}
}

// TestDFSReportsADriftingModel: a path played again must meet the same
// moves.
func TestDFSReportsADriftingModel(t *testing.T) {
	m := &twoWorkers{res: [2]uint8{1, 1}, drift: true}
	s := newDFS(m, true)
	if _, _, err := s.Bounded(1, 1); err == nil || err.Error() != "drifted" {
		t.Fatalf("err = %v, want the model's account of the drift", err)
	}
}

// TestDFSBudgetStopsTheSearch: the schedule budget ends the search, said
// Stopped, and the bound is not explored.
func TestDFSBudgetStopsTheSearch(t *testing.T) {
	m := &twoWorkers{res: [2]uint8{1, 1}}
	s := newDFS(m, true)
	s.Budget = Budget{Count: 3, Unit: "schedule"}
	explored, _, err := s.Bounded(0, 2)
	if err != nil || explored != 0 || s.Schedules != 3 || s.Stopped == "" {
		t.Errorf("explored %d, %d schedules, stopped %q, err %v", explored, s.Schedules, s.Stopped, err)
	}
}
