package search

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Sharding splits one depth-first search among N machines, each searching
// its own part of the tree. At every level (a preemption bound, or the
// prefixes of Cut steps within it) each shard enumerates the same
// prefixes: the paths of the first Depth decision points of the level's
// tree, in the search's own order (a path ending sooner, its schedule
// over, is a prefix too). The j-th prefix belongs to shard j mod N, so
// that every schedule of the level lies below exactly one shard's
// prefixes. Depth is the least that gives at least Target prefixes (or
// the whole tree); the enumeration plays one schedule per prefix of each
// depth tried, cut there, and is the same on every shard as the search is
// deterministic.
//
// The reductions stay sound within a shard. A prefix's decision points
// are kept as the enumeration left them (the moves tried before, and
// whether their worker could move after them), so the sleep sets below a
// prefix are the unsplit search's; the state cache is the shard's own and
// prunes only states its own subtrees explored. A state the unsplit
// search would have pruned because another shard's subtree explored it is
// explored again here: the shards together play more schedules than the
// unsplit search, never fewer.
//
// The search for the shortest prefix of a counterexample (DFS.Shortest)
// is not split: a shard that found one searches every prefix of 1, 2, ...
// steps within its preemption bound, as the unsplit search does, so that
// its shortest prefix is the unsplit search's whenever its bound is (the
// drain that completes a prefix may leave the shard's subtrees, and the
// shard that owns the prefix need not have found a counterexample of its
// own). That search is small beside the verification: prefixes of a few
// steps, ended at the first that breaks a law.

// Shard is one shard of a search: the I-th of N (0 <= I < N).
type Shard struct {
	I, N int
	// Target is how many prefixes a level is split into at least (zero:
	// 4N), deepening the prefixes until there are as many.
	Target int
	// Levels records, level after level, the prefixes of this shard.
	Levels []ShardLevel
}

// ShardLevel is how a level was split.
type ShardLevel struct {
	Bound int `json:"preemptions"`
	// Cut is the level's prefix length, when it searches the prefixes of
	// Cut steps (see DFS.Shortest).
	Cut int `json:"prefixSteps,omitempty"`
	// Depth is the prefixes' number of decision points; zero when the
	// level was not split (a search for the shortest prefix).
	Depth int `json:"depth"`
	// Of is the number of prefixes of the level, Own this shard's, each
	// the indices of its moves (PrefixName).
	Of  int      `json:"of"`
	Own []string `json:"own"`
}

// ParseShard reads "i/N" (0 <= i < N).
func ParseShard(v string) (*Shard, error) {
	a, b, ok := strings.Cut(v, "/")
	i, err1 := strconv.Atoi(a)
	n, err2 := strconv.Atoi(b)
	if !ok || err1 != nil || err2 != nil || n < 1 || i < 0 || i >= n {
		return nil, fmt.Errorf("shard %q is not i/N with 0 <= i < N (e.g. 0/4)", v)
	}
	return &Shard{I: i, N: n}, nil
}

// String is "i/N".
func (sh *Shard) String() string { return fmt.Sprintf("%d/%d", sh.I, sh.N) }

// PrefixName names a path by the index of the move taken at each of its
// decision points ("-" for none).
func PrefixName[F any](path []*Frame[F]) string {
	if len(path) == 0 {
		return "-"
	}
	parts := make([]string, len(path))
	for i, f := range path {
		parts[i] = strconv.Itoa(f.Cur)
	}
	return strings.Join(parts, ".")
}

func (sh *Shard) target() int {
	if sh.Target > 0 {
		return sh.Target
	}
	return 4 * sh.N
}

// shardTasks are the subtrees the level searches: the whole tree unless
// the search is sharded, else this shard's prefixes, first prefix first.
func (s *DFS[F, B]) shardTasks(bound, cut, n int, budget B) *Tasks[F] {
	sh := s.Shard
	if sh == nil {
		return NewTasks[F](n)
	}
	rec := ShardLevel{Bound: bound, Cut: cut}
	if cut > 0 {
		// The search for the shortest prefix of a counterexample is made
		// whole by every shard that found one: see Shard.
		sh.Levels = append(sh.Levels, rec)
		return NewTasks[F](n)
	}
	var all []*Task[F]
	depth := 1
	for ; ; depth++ {
		tasks, deeper, err := s.enumerate(depth, budget)
		if err != nil {
			s.err = err
			return NewTasks[F](n)
		}
		all = tasks
		if len(all) >= sh.target() || !deeper || depth >= s.MaxSteps {
			break
		}
	}
	rec.Depth, rec.Of = depth, len(all)
	var own []*Task[F]
	for j, t := range all {
		if j%sh.N == sh.I {
			own = append(own, t)
			rec.Own = append(rec.Own, PrefixName(t.Frames))
		}
	}
	sh.Levels = append(sh.Levels, rec)
	// Tasks.Next takes the last task first.
	slices.Reverse(own)
	p := NewTasks[F](n)
	p.tasks = own
	return p
}

// enumerate lists the prefixes of depth decision points of the level's
// tree, in the search's order, each as a subtree to search: its decision
// points as the enumeration left them. deeper says some prefix reached
// the depth (a deeper one would split further).
func (s *DFS[F, B]) enumerate(depth int, budget B) (tasks []*Task[F], deeper bool, err error) {
	// A search of its own, cut at depth: no cache, no counts of the level.
	e := &DFS[F, B]{Model: s.Model, MaxSteps: s.MaxSteps, NoPOR: s.NoPOR, cut: depth, lvl: &LevelTally{}}
	c := &Chooser[F, B]{s: e, budget: budget}
	for {
		c.depth = 0
		if err := s.Model.Play(0, c); err != nil {
			return nil, false, err
		}
		if e.err != nil {
			return nil, false, e.err
		}
		frames := make([]*Frame[F], len(c.Path))
		for i, f := range c.Path {
			g := *f
			g.Tried, g.After = slices.Clone(f.Tried), slices.Clone(f.After)
			frames[i] = &g
		}
		tasks = append(tasks, &Task[F]{Frames: frames})
		if len(frames) >= depth {
			deeper = true
		}
		if _, ok := c.Backtrack(); !ok {
			return tasks, deeper, nil
		}
	}
}

// PathOf is the indices of the moves a path took: a schedule's place in
// the search's order (ComparePaths), the same in every shard.
func PathOf[F any](path []*Frame[F]) []int {
	out := make([]int, len(path))
	for i, f := range path {
		out[i] = f.Cur
	}
	return out
}

// ComparePaths orders two schedules as the depth-first search meets them:
// by the index of the first move where they differ, a path before those
// it is a prefix of.
func ComparePaths(a, b []int) int { return slices.Compare(a, b) }

// PathNow is the path of the schedule the walker plays (PathOf).
func (c *Chooser[F, B]) PathNow() []int { return PathOf(c.Path) }
