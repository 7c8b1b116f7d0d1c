package search

import (
	"fmt"
	"maps"
	"slices"
	"testing"
)

// sharded runs the search of m's bounds 0..top as n shards, each on a
// model of its own made by mk, and returns the shards' searches.
func sharded(mk func() *twoWorkers, n, top int, noPOR bool) ([]*DFS[uint8, int], []*twoWorkers) {
	var out []*DFS[uint8, int]
	var models []*twoWorkers
	for i := range n {
		m := mk()
		s := newDFS(m, noPOR)
		s.Shard = &Shard{I: i, N: n}
		out = append(out, s)
		models = append(models, m)
	}
	return out, models
}

// TestShardsPartitionTheTree: for 1 to 5 shards, with and without sleep
// sets and the cache, every prefix of every level belongs to exactly one
// shard, the shards together play every order the unsplit search plays,
// and (without the cache, which is each shard's own) exactly as many
// schedules; with it, no fewer.
func TestShardsPartitionTheTree(t *testing.T) {
	for _, c := range []struct {
		res   [2]uint8
		noPOR bool
		keys  bool
	}{{[2]uint8{1, 1}, true, false}, {[2]uint8{1, 2}, false, false}, {[2]uint8{1, 1}, false, true}, {[2]uint8{1, 2}, false, true}} {
		mk := func() *twoWorkers { return &twoWorkers{res: c.res, keys: c.keys, steps: 3} }
		um := mk()
		u := newDFS(um, c.noPOR)
		if _, _, err := u.Bounded(0, 2); err != nil {
			t.Fatal(err)
		}
		for n := 1; n <= 5; n++ {
			name := fmt.Sprintf("%+v/%d shards", c, n)
			shards, models := sharded(mk, n, 2, c.noPOR)
			var sum int64
			orders := map[string]bool{}
			// owner[level][prefix] is the shard that owns it.
			owner := map[int]map[string]int{}
			for i, s := range shards {
				if _, found, err := s.Bounded(0, 2); err != nil || found {
					t.Fatalf("%s: shard %d: found %v, err %v", name, i, found, err)
				}
				sum += s.Schedules
				maps.Copy(orders, models[i].outcome)
				for _, l := range s.Shard.Levels {
					if owner[l.Bound] == nil {
						owner[l.Bound] = map[string]int{}
					}
					for _, p := range l.Own {
						if j, dup := owner[l.Bound][p]; dup {
							t.Errorf("%s: bound %d: prefix %s in shards %d and %d", name, l.Bound, p, j, i)
						}
						owner[l.Bound][p] = i
					}
					if len(owner[l.Bound]) > l.Of {
						t.Errorf("%s: bound %d: more prefixes owned than the %d enumerated", name, l.Bound, l.Of)
					}
				}
			}
			for b := range 3 {
				of := shards[0].Shard.Levels[b].Of
				if len(owner[b]) != of {
					t.Errorf("%s: bound %d: %d prefixes owned, %d enumerated", name, b, len(owner[b]), of)
				}
			}
			// With the cache, a shard plays to the end orders the unsplit
			// search cut at a state another shard's subtree explored.
			covered := true
			for o := range um.outcome {
				covered = covered && orders[o]
			}
			if !covered || (!c.keys && !maps.Equal(orders, um.outcome)) {
				t.Errorf("%s: orders %v, unsplit %v", name, slices.Sorted(maps.Keys(orders)), slices.Sorted(maps.Keys(um.outcome)))
			}
			if (!c.keys && sum != u.Schedules) || sum < u.Schedules {
				t.Errorf("%s: %d schedules across the shards, %d unsplit", name, sum, u.Schedules)
			}
		}
	}
}

// TestShardsFindTheUnsplitCounterexample: the least counterexample of the
// shards (fewest preemptions, then the shortest prefix, then the search's
// order) is the unsplit search's.
func TestShardsFindTheUnsplitCounterexample(t *testing.T) {
	for _, bad := range []string{"000111", "001011", "011100", "110010", "100011"} {
		// The law judges the order itself, not the state it ends in: no
		// cache, and every step conflicts.
		mk := func() *twoWorkers { return &twoWorkers{res: [2]uint8{1, 1}, steps: 3, bad: bad} }
		type ce struct {
			bound, cut int
			order      string
			path       []int
		}
		search := func(s *DFS[uint8, int], m *twoWorkers) (ce, bool) {
			_, found, err := s.Bounded(0, 3)
			if err != nil {
				t.Fatal(err)
			}
			if !found {
				return ce{}, false
			}
			bound := s.Levels[len(s.Levels)-1].Bound
			found, complete, err := s.Shortest(bound, 6)
			if err != nil || !found || !complete {
				t.Fatalf("%s: Shortest = %v, %v, %v", bad, found, complete, err)
			}
			return ce{bound, s.Levels[len(s.Levels)-1].Cut, m.last, slices.Clone(m.lastPath)}, true
		}
		um := mk()
		want, ok := search(newDFS(um, false), um)
		if !ok {
			t.Fatalf("%s: the unsplit search found nothing", bad)
		}
		for n := 2; n <= 4; n++ {
			shards, models := sharded(mk, n, 3, false)
			var best *ce
			for i, s := range shards {
				got, ok := search(s, models[i])
				if !ok {
					continue
				}
				if best == nil || got.bound < best.bound || got.bound == best.bound && (got.cut < best.cut ||
					got.cut == best.cut && ComparePaths(got.path, best.path) < 0) {
					best = &got
				}
			}
			if best == nil || best.order != want.order || best.bound != want.bound || best.cut != want.cut {
				t.Errorf("%s, %d shards: %+v; unsplit %+v", bad, n, best, want)
			}
		}
	}
}

func TestParseShard(t *testing.T) {
	for _, bad := range []string{"", "1", "4/4", "-1/2", "0/0", "a/b", "1/2/3"} {
		if _, err := ParseShard(bad); err == nil {
			t.Errorf("ParseShard(%q) accepted", bad)
		}
	}
	if sh, err := ParseShard("2/4"); err != nil || sh.I != 2 || sh.N != 4 || sh.String() != "2/4" {
		t.Errorf("ParseShard(2/4) = %v, %v", sh, err)
	}
}
