package explore

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/idemcheck/idemcheck/faults/runner"
	"github.com/idemcheck/idemcheck/faults/scenario"
	"github.com/idemcheck/idemcheck/impl/system"
	"github.com/idemcheck/idemcheck/properties"
	"github.com/idemcheck/idemcheck/properties/coverage"
)

var tiny = World{Events: []string{"ok"}, Groups: 1, WorkersPerGroup: 2}

// bruteForce plays every schedule of menu steps up to depth, each from the
// start, and returns the number of schedules and the distinct fingerprints
// of the states they reach.
func bruteForce(t *testing.T, w World, menu []string, depth int, o runner.FingerprintOptions) (int, map[uint64]bool) {
	t.Helper()
	base, err := w.Scenario()
	if err != nil {
		t.Fatal(err)
	}
	steps, err := Steps(base, menu)
	if err != nil {
		t.Fatal(err)
	}
	fp := runner.NewFingerprinter(base, o)
	seen := map[uint64]bool{}
	schedules := 0
	var rec func(prefix []scenario.Step)
	rec = func(prefix []scenario.Step) {
		schedules++
		wd, err := runner.NewWorld(base, system.Reference().Consumption)
		if err != nil {
			t.Fatal(err)
		}
		for i, st := range prefix {
			if err := wd.Apply(i, st); err != nil {
				t.Fatal(err)
			}
		}
		seen[fp.Sum(wd)] = true
		wd.Close()
		if len(prefix) == depth {
			return
		}
		for _, st := range steps {
			rec(append(prefix[:len(prefix):len(prefix)], st))
		}
	}
	rec(nil)
	return schedules, seen
}

// A clean exploration visits every schedule of a tiny world: as a tree it
// plays exactly the schedules a brute-force enumeration plays, and with its
// visited set (plain, with symmetry, with partial order) it reaches exactly
// the distinct states the brute force reaches.
func TestExplorationVisitsEverySchedule(t *testing.T) {
	menu := []string{"produce", "duplicate", "deliver", "step", "crash", "advance"}
	const depth = 4
	ref := system.Reference()
	schedules, plain := bruteForce(t, tiny, menu, depth, runner.FingerprintOptions{})
	_, sym := bruteForce(t, tiny, menu, depth, runner.FingerprintOptions{SymmetricWorkers: true, SymmetricEvents: true})

	for _, engine := range []string{EngineCompact, EngineRunner} {
		tree, err := Explore(context.Background(), ref, Options{World: tiny, Menu: menu, Depth: depth, NoDedup: true, Engine: engine})
		if err != nil {
			t.Fatal(err)
		}
		if got := tree.Transitions + 1; got != int64(schedules) {
			t.Errorf("%s: tree search played %d schedules, brute force %d", engine, got, schedules)
		}
	}
	for _, c := range []struct {
		name string
		opts Options
		want int
	}{
		{"no reduction", Options{NoSymmetry: true, NoPOR: true}, len(plain)},
		{"partial order", Options{NoSymmetry: true}, len(plain)},
		{"symmetry", Options{NoPOR: true}, len(sym)},
		{"symmetry and partial order", Options{}, len(sym)},
	} {
		for _, engine := range []string{EngineCompact, EngineRunner} {
			o := c.opts
			o.World, o.Menu, o.Depth, o.Engine = tiny, menu, depth, engine
			r, err := Explore(context.Background(), ref, o)
			if err != nil {
				t.Fatal(err)
			}
			if r.Counterexample != nil {
				t.Fatalf("%s, %s: the reference was flagged:\n%s", c.name, engine, r.Counterexample.Verdict)
			}
			if r.States != int64(c.want) || r.Depth != depth {
				t.Errorf("%s, %s: %d states to depth %d, brute force reaches %d", c.name, engine, r.States, r.Depth, c.want)
			}
		}
	}
	if len(sym) >= len(plain) {
		t.Errorf("symmetry folds nothing: %d states, %d without", len(sym), len(plain))
	}
}

// The reductions save states (symmetry) and transitions (partial order)
// without losing any state; the figures are logged.
func TestReductionsSave(t *testing.T) {
	w := World{Events: []string{"ok", "ok"}, Groups: 1, WorkersPerGroup: 2}
	menu := []string{"produce", "deliver:1", "step", "crash"}
	const depth = 7
	run := func(o Options) *Result {
		o.World, o.Menu, o.Depth = w, menu, depth
		r, err := Explore(context.Background(), system.Reference(), o)
		if err != nil {
			t.Fatal(err)
		}
		if r.Counterexample != nil {
			t.Fatalf("the reference was flagged:\n%s", r.Counterexample.Verdict)
		}
		return r
	}
	none := run(Options{NoSymmetry: true, NoPOR: true})
	por := run(Options{NoSymmetry: true})
	sym := run(Options{NoPOR: true})
	both := run(Options{})
	t.Logf("2 events x 2 workers, depth %d: none %d states %d transitions; symmetry %d states %d transitions; partial order %d states %d transitions (%d skipped); both %d states %d transitions",
		depth, none.States, none.Transitions, sym.States, sym.Transitions, por.States, por.Transitions, por.Skipped, both.States, both.Transitions)
	if por.States != none.States || both.States != sym.States {
		t.Errorf("partial order lost states: %d vs %d, %d vs %d", por.States, none.States, both.States, sym.States)
	}
	if por.Skipped == 0 || por.Transitions >= none.Transitions {
		t.Errorf("partial order saved nothing: %d transitions vs %d", por.Transitions, none.Transitions)
	}
	if sym.States >= none.States {
		t.Errorf("symmetry saved nothing: %d states vs %d", sym.States, none.States)
	}
}

// A counterexample is a shortest schedule: one step less finds nothing.
func TestCounterexampleIsShortest(t *testing.T) {
	m, ok := system.Lookup("takeover-without-fencing")
	if !ok {
		t.Fatal("takeover-without-fencing is not registered")
	}
	r, err := Explore(context.Background(), m, Options{World: tiny, Depth: 6})
	if err != nil {
		t.Fatal(err)
	}
	cx := r.Counterexample
	if cx == nil {
		t.Fatal("takeover-without-fencing survived depth 6")
	}
	if cx.Depth < 2 {
		t.Fatalf("found at depth %d: pick a deeper mutant for this test", cx.Depth)
	}
	if cx.Verdict.Pass || len(cx.Scenario.Consumption.Steps) != cx.Depth {
		t.Fatalf("counterexample: depth %d, %d steps, verdict %s", cx.Depth, len(cx.Scenario.Consumption.Steps), cx.Verdict)
	}
	if want := properties.ID(cx.Verdict.Property, cx.Verdict.Law); cx.Law != want {
		t.Fatalf("the counterexample names law %q, its verdict %q", cx.Law, want)
	}
	if err := cx.Scenario.Validate(); err != nil {
		t.Fatalf("the counterexample is not a valid scenario: %v", err)
	}
	shorter, err := Explore(context.Background(), m, Options{World: tiny, Depth: cx.Depth - 1})
	if err != nil {
		t.Fatal(err)
	}
	if shorter.Counterexample != nil || shorter.Depth != cx.Depth-1 {
		t.Fatalf("depth %d found a counterexample too", cx.Depth-1)
	}
}

func TestBadBounds(t *testing.T) {
	ref := system.Reference()
	for _, o := range []Options{
		{World: tiny, Depth: 0},
		{World: World{Events: []string{"ok"}, Groups: 1}, Depth: 3},
		{World: World{Groups: 1, WorkersPerGroup: 1}, Depth: 3},
		{World: tiny, Depth: 3, Menu: []string{"produce", "teleport"}},
		{World: World{Events: []string{"sometimes"}, Groups: 1, WorkersPerGroup: 1}, Depth: 3},
	} {
		if _, err := Explore(context.Background(), ref, o); !errors.Is(err, ErrBounds) {
			t.Errorf("%+v: got %v, want a bounds error", o, err)
		}
	}
}

// Ctrl-C (the context ending) returns the depth fully explored so far.
func TestInterruptedReportsDepthDone(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	o := Options{World: tiny, Depth: 30, Progress: func(p Progress) {
		if p.Depth == 4 {
			cancel()
		}
	}}
	r, err := Explore(ctx, system.Reference(), o)
	if err != nil {
		t.Fatal(err)
	}
	if !r.Interrupted || r.Stopped != "interrupted" || r.Depth != 4 {
		t.Fatalf("interrupted %v (stopped %q) at depth %d, want depth 4 (the batch that saw the cancel ends it)", r.Interrupted, r.Stopped, r.Depth)
	}
}

// A budget of states or of memory ends the search with the depths done
// so far, saying which bound it was; it is not an interruption.
func TestBudgetEndsTheSearch(t *testing.T) {
	for _, c := range []struct {
		name string
		o    Options
		why  string
	}{
		{"states", Options{World: tiny, Depth: 30, MaxStates: 500}, "the state budget (500) ran out"},
		{"memory", Options{World: tiny, Depth: 30, MaxBytes: 200 << 10}, "the memory budget (204800 bytes) ran out"},
	} {
		for _, engine := range []string{EngineCompact, EngineRunner} {
			c.o.Engine = engine
			r, err := Explore(context.Background(), system.Reference(), c.o)
			if err != nil {
				t.Fatal(err)
			}
			if r.Stopped != c.why || r.Interrupted || r.Depth >= 30 || r.Depth < 1 {
				t.Fatalf("%s, %s: stopped %q, interrupted %v, at depth %d", c.name, engine, r.Stopped, r.Interrupted, r.Depth)
			}
			if r.States < c.o.MaxStates {
				t.Fatalf("%s, %s: stopped at %d states, short of the budget", c.name, engine, r.States)
			}
		}
	}
}

// Forking copies of a world (the reference) and replaying every schedule
// (any target) explore the same states and find the same counterexamples.
func TestCloneAgreesWithReplay(t *testing.T) {
	for _, name := range []string{"reference", "no-dedup", "mark-before-effect"} {
		target, ok := system.Lookup(name)
		if !ok {
			t.Fatalf("%s is not registered", name)
		}
		var rs [2]*Result
		for i, noClone := range []bool{false, true} {
			r, err := Explore(context.Background(), target, Options{World: tiny, Depth: 5, NoClone: noClone, Engine: EngineRunner})
			if err != nil {
				t.Fatal(err)
			}
			rs[i] = r
		}
		a, b := rs[0], rs[1]
		if a.States != b.States || a.Transitions != b.Transitions || (a.Counterexample == nil) != (b.Counterexample == nil) {
			t.Fatalf("%s: forking %d states %d transitions, replaying %d states %d transitions", name, a.States, a.Transitions, b.States, b.Transitions)
		}
		if a.Counterexample != nil {
			ja, _ := scenario.Marshal(a.Counterexample.Scenario)
			jb, _ := scenario.Marshal(b.Counterexample.Scenario)
			if string(ja) != string(jb) {
				t.Fatalf("%s: different counterexamples:\n%s\n%s", name, ja, jb)
			}
		}
	}
}

// fakeT records what Check reports.
type fakeT struct {
	testing.TB
	failed bool
	msg    string
}

func (f *fakeT) Helper()                   {}
func (f *fakeT) Logf(string, ...any)       {}
func (f *fakeT) Errorf(s string, a ...any) { f.failed, f.msg = true, s }
func (f *fakeT) Fatalf(s string, a ...any) { f.failed, f.msg = true, s }

func TestCheckEntryPoint(t *testing.T) {
	Check(t, system.Reference(), Options{World: tiny, Depth: 4})
	m, _ := system.Lookup("no-dedup")
	ft := &fakeT{}
	if Check(ft, m, Options{World: tiny, Depth: 3}); !ft.failed {
		t.Fatal("Check passed no-dedup")
	}
}

// Exploration counts the coverage situations, one run per distinct state.
func TestExplorationCountsCoverage(t *testing.T) {
	r, err := Explore(context.Background(), system.Reference(), Options{World: World{Events: []string{"transient:1"}, Groups: 1, WorkersPerGroup: 2}, Depth: 5, Coverage: true})
	if err != nil {
		t.Fatal(err)
	}
	if got := r.Coverage.Total(); got != r.States {
		t.Fatalf("coverage counted %d runs for %d states", got, r.States)
	}
	for _, name := range []string{coverage.CrashAfterClaim, coverage.RedeliveryAfterNack, coverage.Duplicate2To10, coverage.MaxAttemptsReached, coverage.ConcurrentClaims} {
		if r.Coverage.Reached[name] == 0 {
			t.Errorf("no state reached %s: %v", name, r.Coverage.Reached)
		}
	}
}

// The same exploration gives the same counterexample and the same counts,
// whatever the number of goroutines: on the compact engine too.
func TestExplorationIsDeterministic(t *testing.T) {
	var levels []Level
	for _, par := range []int{1, 2, 4} {
		r, err := Explore(context.Background(), system.Reference(), Options{World: World{Events: []string{"ok", "transient:1"}, Groups: 1, WorkersPerGroup: 2},
			Menu: CoreMenu, Depth: 6, Parallel: par, Coverage: true})
		if err != nil || r.Engine != EngineCompact {
			t.Fatalf("parallel %d: %v on engine %q", par, err, r.Engine)
		}
		if levels == nil {
			levels = r.Levels
		} else if !slices.Equal(levels, r.Levels) {
			t.Fatalf("parallel %d: levels %v, want %v", par, r.Levels, levels)
		}
	}
	m, _ := system.Lookup("takeover-without-fencing")
	var first []byte
	var states int64
	for _, par := range []int{1, 2, 4, 4} {
		r, err := Explore(context.Background(), m, Options{World: tiny, Depth: 7, Parallel: par})
		if err != nil || r.Counterexample == nil {
			t.Fatalf("parallel %d: %v, counterexample %v", par, err, r.Counterexample != nil)
		}
		js, _ := scenario.Marshal(r.Counterexample.Scenario)
		if first == nil {
			first, states = js, r.States
			continue
		}
		if string(js) != string(first) || r.States != states {
			t.Fatalf("parallel %d: %d states and\n%s\nwant %d states and\n%s", par, r.States, js, states, first)
		}
	}
}
