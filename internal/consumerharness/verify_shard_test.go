package consumerharness

import (
	"fmt"
	"strings"
	"testing"
)

// leastOfShards is the counterexample the merge of shards reports: the
// least by CompareOrders, ties to the lower shard.
func leastOfShards(rs []VerifyResult) *VerifyResult {
	var best *VerifyResult
	for i := range rs {
		r := &rs[i]
		if r.Failed && (best == nil || CompareOrders(*r.Order, *best.Order) < 0) {
			best = r
		}
	}
	return best
}

// TestShardsAgreeWithTheUnsplitSearch: a broken consumer searched whole
// and as 2, 3 and 5 shards gives the same counterexample (law,
// preemptions, steps, scenario); a correct one is verified by every shard,
// and the shards together play at least the unsplit search's schedules,
// below prefixes that cover every level's exactly once.
func TestShardsAgreeWithTheUnsplitSearch(t *testing.T) {
	b := Bounds{Events: []Fate{FateOK}, Workers: 2, Preemptions: 1, Crashes: 1, Duplicates: 1}
	for _, c := range []Consumer{soundnessConsumers()[1], adrConsumer()} {
		whole, err := Explore(c, b)
		if err != nil {
			t.Fatal(err)
		}
		if whole.Failed && (whole.Order == nil || whole.Order.PrefixSteps == 0) {
			t.Fatalf("%s: the unsplit counterexample has no place in the order: %+v", c.Name, whole.Order)
		}
		for _, n := range []int{2, 3, 5} {
			name := fmt.Sprintf("%s, %d shards", c.Name, n)
			var rs []VerifyResult
			var schedules int64
			owned := map[string]int{}
			levels := map[string]int{}
			reported := map[string]int{}
			for i := range n {
				r, err := Explore(c, b, VerifyShard(i, n))
				if err != nil {
					t.Fatal(err)
				}
				if r.Shard != fmt.Sprintf("%d/%d", i, n) {
					t.Errorf("%s: shard %d says it is %q", name, i, r.Shard)
				}
				rs = append(rs, r)
				schedules += r.Schedules
				for _, l := range r.ShardLevels {
					if l.Depth == 0 {
						continue
					}
					lv := fmt.Sprintf("%d/%d/%d", l.World, l.Bound, l.Cut)
					levels[lv] = l.Of
					reported[lv]++
					for _, p := range l.Own {
						owned[lv+":"+p]++
					}
				}
			}
			for lv, of := range levels {
				if reported[lv] < n {
					// The search for a shorter prefix, made only by the
					// shards that found a counterexample.
					continue
				}
				got := 0
				for k, times := range owned {
					if len(k) > len(lv) && k[:len(lv)+1] == lv+":" {
						got++
						if times != 1 {
							t.Errorf("%s: prefix %s searched by %d shards", name, k, times)
						}
					}
				}
				if got != of {
					t.Errorf("%s: level %s: %d prefixes owned of %d", name, lv, got, of)
				}
			}
			if whole.Verified {
				for i, r := range rs {
					if !r.Verified {
						t.Errorf("%s: shard %d not verified: %s", name, i, r.Report())
					}
				}
				if schedules < whole.Schedules {
					t.Errorf("%s: %d schedules across the shards, %d unsplit", name, schedules, whole.Schedules)
				}
				continue
			}
			for i, r := range rs {
				if r.Failed {
					t.Logf("%s: shard %d: %+v %d steps", name, i, *r.Order, r.Steps)
				}
			}
			t.Logf("%s: unsplit %+v", name, *whole.Order)
			got := leastOfShards(rs)
			if got == nil {
				t.Fatalf("%s: no shard found the counterexample", name)
			}
			a, _ := whole.Scenario.Marshal()
			g, _ := got.Scenario.Marshal()
			if got.Law != whole.Law || got.Preemptions != whole.Preemptions || got.Steps != whole.Steps || string(a) != string(g) {
				t.Errorf("%s: the shards' counterexample differs:\n%s %d %d\n%s\nunsplit:\n%s %d %d\n%s", name,
					got.Law, got.Preemptions, got.Steps, g, whole.Law, whole.Preemptions, whole.Steps, a)
			}
		}
	}
}

// TestShardsLoseNoOutcome: the states met and the outcomes reached by 3
// shards together, each with its reductions, are the unsplit search's
// (which TestReductionsLoseNoOutcome holds to the brute force's), on every
// world of the soundness tests.
func TestShardsLoseNoOutcome(t *testing.T) {
	for _, w := range soundnessWorlds() {
		t.Run(w.c.Name, func(t *testing.T) {
			whole, _ := outcomesOf(t, w.c, w.b)
			union := map[string]bool{}
			for i := range 3 {
				got, _ := outcomesOf(t, w.c, w.b, VerifyShard(i, 3))
				for k := range got {
					union[k] = true
				}
			}
			if lost := diffSets(whole, union); len(lost) > 0 {
				t.Errorf("%s: the shards lost %d of %d states and outcomes:\n%s", w, len(lost), len(whole), strings.Join(lost, "\n"))
			}
			if extra := diffSets(union, whole); len(extra) > 0 {
				t.Errorf("%s: the shards met %d states or outcomes the unsplit search did not:\n%s", w, len(extra), strings.Join(extra, "\n"))
			}
		})
	}
}
