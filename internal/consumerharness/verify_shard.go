package consumerharness

import (
	"cmp"
	"fmt"
	"strings"

	"github.com/idemcheck/idemcheck/internal/search"
)

// A verification split among machines: each searches one shard of every
// world's tree (search.Shard), and the merge of their results is the
// unsplit verification's verdict. What makes the merge exact is the order
// of counterexamples: the unsplit search reports, among the schedules that
// break a law, one of the first world that has any, with the fewest
// preemptions, the shortest prefix the drain completes into a breach, and
// the first of those in the search's order (its search for a shorter
// prefix runs on one walker, in that order). A shard reports the least of
// its own by the same order, and the least of the shards' is the unsplit
// search's.

// VerifyShard has Explore search shard i of n only (0 <= i < n): the
// schedules below the i-th of every n prefixes of each level's tree. Its
// result says which prefixes it searched (VerifyResult.ShardLevels) and
// where its counterexample lies in the search's order
// (VerifyResult.Order); MergeShards combines the n results.
func VerifyShard(i, n int) Option {
	return func(c *config) { c.verify.shard, c.verify.shards = i, n }
}

// ShardLevel is how one level of a world's search was split.
type ShardLevel struct {
	World int `json:"world,omitempty"`
	search.ShardLevel
}

// CounterexampleOrder is a counterexample's place among all the schedules
// that break a law: the world it lies in, its preemptions, the prefix
// length it was found at (zero: a whole schedule, when the search for a
// shorter prefix did not finish) and its path (the index of the choice
// taken at each decision point).
type CounterexampleOrder struct {
	World       int   `json:"world"`
	Preemptions int   `json:"preemptions"`
	PrefixSteps int   `json:"prefixSteps"`
	Path        []int `json:"path"`
}

// CompareOrders orders counterexamples: by world, fewest preemptions,
// shortest prefix (a whole schedule last), then the search's order.
func CompareOrders(a, b CounterexampleOrder) int {
	steps := func(o CounterexampleOrder) int {
		if o.PrefixSteps == 0 {
			return int(^uint(0) >> 1)
		}
		return o.PrefixSteps
	}
	if c := cmp.Compare(a.World, b.World); c != 0 {
		return c
	}
	if c := cmp.Compare(a.Preemptions, b.Preemptions); c != 0 {
		return c
	}
	if c := cmp.Compare(steps(a), steps(b)); c != 0 {
		return c
	}
	return search.ComparePaths(a.Path, b.Path)
}

// newShard is the shard a world's search makes (nil: unsplit).
func (c verifyConfig) newShard() *search.Shard {
	if c.shards < 1 {
		return nil
	}
	return &search.Shard{I: c.shard, N: c.shards}
}

// shardResult records how the world's search was split.
func (s *searcher) shardResult(res *VerifyResult) {
	sh := s.dfs.Shard
	if sh == nil {
		return
	}
	res.Shard = sh.String()
	for _, l := range sh.Levels {
		res.ShardLevels = append(res.ShardLevels, ShardLevel{ShardLevel: l})
	}
}

// orderOf is where f lies in the order of counterexamples, found within
// the preemptions of the schedule that broke a law first (its world is set
// by VerifyResult.add).
func orderOf(f *found, preemptions int) *CounterexampleOrder {
	return &CounterexampleOrder{Preemptions: preemptions, PrefixSteps: f.cut, Path: f.path}
}

// shardNote says, per level, how many prefixes the shard searched.
func shardNote(levels []ShardLevel) string {
	var parts []string
	for _, l := range levels {
		if l.Depth == 0 {
			parts = append(parts, fmt.Sprintf("search (%d) <= %d preemption(s), prefixes of %d step(s): whole", l.World+1, l.Bound, l.Cut))
			continue
		}
		parts = append(parts, fmt.Sprintf("search (%d) <= %d preemption(s): %d of %d prefixes of %d choice(s)", l.World+1, l.Bound, len(l.Own), l.Of, l.Depth))
	}
	return "the schedules below its prefixes only; " + strings.Join(parts, ", ")
}
