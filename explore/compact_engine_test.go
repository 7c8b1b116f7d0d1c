package explore

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/idemcheck/idemcheck/explore/compact"
	"github.com/idemcheck/idemcheck/faults/scenario"
	"github.com/idemcheck/idemcheck/impl/contract/broker"
	"github.com/idemcheck/idemcheck/impl/system"
	"github.com/idemcheck/idemcheck/internal/search"
	"github.com/idemcheck/idemcheck/properties"
)

// TestCompactEngineMatchesRunner explores worlds on both engines and
// compares them depth by depth: the same distinct states, the same
// transitions and partial-order skips, the same coverage. The compact
// engine restates the reference; this is what holds it to it.
func TestCompactEngineMatchesRunner(t *testing.T) {
	cases := []struct {
		name  string
		world World
		menu  []string
		depth int
		opts  func(*Options)
	}{
		{"1x2-full", World{Events: []string{"ok"}, Groups: 1, WorkersPerGroup: 2}, FullMenu, 7, nil},
		{"poison-full", World{Events: []string{"poison"}, Groups: 1, WorkersPerGroup: 2}, FullMenu, 7, nil},
		{"transient-core", World{Events: []string{"transient:1"}, Groups: 1, WorkersPerGroup: 2}, CoreMenu, 8, nil},
		{"2ok-core", World{Events: []string{"ok", "ok"}, Groups: 1, WorkersPerGroup: 2}, CoreMenu, 6, nil},
		{"2groups", World{Events: []string{"ok"}, Groups: 2, WorkersPerGroup: 1}, FullMenu, 6, nil},
		{"mixed-no-symmetry", World{Events: []string{"ok", "poison"}, Groups: 1, WorkersPerGroup: 2, Nodes: 2}, []string{"produce", "duplicate:2", "deliver", "step", "crash", "advance:600", "cleanup", "replay", "clock-step"}, 5,
			func(o *Options) { o.NoSymmetry = true }},
		{"no-por", World{Events: []string{"ok"}, Groups: 1, WorkersPerGroup: 3}, CoreMenu, 6, func(o *Options) { o.NoPOR = true }},
		{"por-across-batches", World{Events: []string{"ok", "ok"}, Groups: 1, WorkersPerGroup: 2}, []string{"produce", "deliver:1", "step", "crash"}, 7,
			func(o *Options) { o.NoSymmetry = true }},
		{"por-symmetry", World{Events: []string{"ok", "ok"}, Groups: 1, WorkersPerGroup: 2}, []string{"produce", "deliver:1", "step", "crash", "advance"}, 7, nil},
		{"retention", World{Events: []string{"ok"}, Groups: 1, WorkersPerGroup: 2, RetentionMs: 500, Policy: broker.Policy{AckTimeoutMs: 700}, LeaseMs: 300}, []string{"produce", "duplicate", "deliver", "step", "crash", "advance:400", "cleanup"}, 8, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			run := func(engine string) *Result {
				o := Options{World: tc.world, Menu: tc.menu, Depth: tc.depth, Engine: engine, Coverage: true}
				if tc.opts != nil {
					tc.opts(&o)
				}
				r, err := explore(context.Background(), system.Reference(), o, 1)
				if err != nil {
					t.Fatal(err)
				}
				if r.Engine != engine {
					t.Fatalf("engine %q ran, asked for %q", r.Engine, engine)
				}
				return r
			}
			c, r := run(EngineCompact), run(EngineRunner)
			if c.Counterexample != nil || r.Counterexample != nil {
				t.Fatalf("the reference broke a law: compact %v, runner %v", c.Counterexample, r.Counterexample)
			}
			if !slices.Equal(c.Levels, r.Levels) || c.Skipped != r.Skipped || c.States != r.States || c.Transitions != r.Transitions {
				t.Fatalf("the engines differ:\ncompact %v skipped %d\nrunner  %v skipped %d", c.Levels, c.Skipped, r.Levels, r.Skipped)
			}
			if fmt.Sprint(c.Coverage.Rows()) != fmt.Sprint(r.Coverage.Rows()) {
				t.Fatalf("coverage differs:\ncompact %v\nrunner  %v", c.Coverage.Rows(), r.Coverage.Rows())
			}
			t.Logf("%d states, %d transitions, %d skipped", c.States, c.Transitions, c.Skipped)
		})
	}
}

// TestCompactDriftIsAnError: a violation the compact engine finds is judged
// again on the reference itself; when the reference passes the schedule,
// the exploration fails with the drift, never reports a counterexample.
func TestCompactDriftIsAnError(t *testing.T) {
	base, err := tiny.Scenario()
	if err != nil {
		t.Fatal(err)
	}
	menu, err := Steps(base, FullMenu)
	if err != nil {
		t.Fatal(err)
	}
	e := &engine{target: system.Reference(), opts: Options{World: tiny, Depth: 1}, base: base, menu: menu, res: &Result{},
		props: properties.ForKind(scenario.KindConsumption)}
	e.bfs = &search.BFS{Visited: search.NewSet(), Nodes: [][]search.Node{{{Parent: -1, Move: -1}}}}
	ce, err := e.newCompactEngine()
	if err != nil {
		t.Fatal(err)
	}
	pool := &sync.Pool{New: func() any { return &cworker{judge: compact.NewJudge(nil, false)} }}
	// A produce that, by a drifted model's judge, credits twice.
	c := &ccand{Edge: search.Edge{Parent: 0, Move: 0, Broken: true, New: true}, law: compact.LawAtMostOnce}
	if !e.compactFinals(ce, pool, []*ccand{c}, 1) {
		t.Fatal("a breach did not stop the search")
	}
	if e.res.Counterexample != nil {
		t.Fatalf("the reference passes, yet a counterexample was reported: %+v", e.res.Counterexample.Verdict)
	}
	if e.compactErr == nil || !strings.Contains(e.compactErr.Error(), "drifted") || !strings.Contains(e.compactErr.Error(), "single-credit/at-most-once") {
		t.Fatalf("drift error = %v", e.compactErr)
	}
}
