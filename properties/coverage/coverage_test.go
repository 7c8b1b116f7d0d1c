package coverage_test

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/idemcheck/idemcheck/faults/gen"
	"github.com/idemcheck/idemcheck/faults/runner"
	"github.com/idemcheck/idemcheck/faults/scenario"
	"github.com/idemcheck/idemcheck/impl/contract/broker"
	"github.com/idemcheck/idemcheck/impl/system"
	"github.com/idemcheck/idemcheck/properties/coverage"
)

// campaign plays n scenarios drawn by g (deterministically: rapid's
// examples 0..n-1) against the reference and returns the counts.
func campaign(t *testing.T, g *rapid.Generator[*scenario.Scenario], n int) coverage.Counts {
	t.Helper()
	obs := coverage.NewObserver()
	for i := range n {
		out, err := runner.Run(g.Example(i), system.Reference(), obs)
		if err != nil {
			t.Fatalf("example %d: %v", i, err)
		}
		obs.End(out)
	}
	return obs.Counts()
}

// TestGeneratorReachesEverySituation is the coverage check of a campaign of
// MinChecks runs of each kind: every situation is reached.
func TestGeneratorReachesEverySituation(t *testing.T) {
	var c coverage.Counts
	c.Merge(campaign(t, gen.Consumption(), coverage.MinChecks))
	c.Merge(campaign(t, gen.Projection(), 300))
	if f := c.Failure(); f != "" {
		t.Fatal(f)
	}
	for _, r := range c.Rows() {
		t.Logf("%-34s %5d / %d", r.Name, r.Reached, r.Runs)
	}
	if len(c.Rows()) != len(coverage.All()) {
		t.Fatalf("the table has %d rows, want one per situation (%d)", len(c.Rows()), len(coverage.All()))
	}
}

// TestSwitchedOffFaultTripsCoverage proves the check can fail: a generator
// that never crashes a worker leaves every crash situation unreached, and a
// campaign of MinChecks runs fails on exactly those.
func TestSwitchedOffFaultTripsCoverage(t *testing.T) {
	c := campaign(t, gen.ConsumptionWithout(scenario.OpCrash), coverage.MinChecks)
	f := c.Failure()
	if f == "" {
		t.Fatal("a campaign that never crashes a worker passed the coverage check")
	}
	var missing []string
	for _, s := range c.Missing() {
		missing = append(missing, s.Name)
	}
	want := []string{coverage.CrashBeforeClaim, coverage.CrashAfterClaim, coverage.CrashAfterHandle,
		coverage.CrashAfterCommit, coverage.CrashAfterFail, coverage.CrashAfterDeadLetter}
	if !slices.Equal(missing, want) {
		t.Fatalf("missing %v, want exactly the crash situations %v", missing, want)
	}
	for _, name := range want {
		if !strings.Contains(f, name) {
			t.Fatalf("the failure does not name %s: %s", name, f)
		}
	}
	// Too small a campaign is not judged.
	small := campaign(t, gen.ConsumptionWithout(scenario.OpCrash), 50)
	if small.Failure() != "" || small.Judged() {
		t.Fatalf("a campaign of 50 runs was judged: %q", small.Failure())
	}
}

func TestCountsMergeAndJSON(t *testing.T) {
	var a, b coverage.Counts
	a.AddRun(scenario.KindConsumption, coverage.Set(0).With(coverage.PoisonToDLQ))
	b.AddRun(scenario.KindConsumption, coverage.Set(0).With(coverage.PoisonToDLQ).With(coverage.Duplicate2To10))
	b.AddRun(scenario.KindProjection, coverage.Set(0).With(coverage.HLCClockStepBack))
	a.Merge(b)
	if a.Runs[scenario.KindConsumption] != 2 || a.Reached[coverage.PoisonToDLQ] != 2 || a.Reached[coverage.Duplicate2To10] != 1 || a.Total() != 3 {
		t.Fatalf("merged counts %+v", a)
	}
	raw, err := json.Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	var back coverage.Counts
	if err := json.Unmarshal(raw, &back); err != nil {
		t.Fatal(err)
	}
	if back.Reached[coverage.PoisonToDLQ] != 2 || back.Runs[scenario.KindProjection] != 1 {
		t.Fatalf("counts did not survive JSON: %s", raw)
	}
	// A kind that was never run is not blamed.
	var cons coverage.Counts
	cons.AddRun(scenario.KindConsumption, 0)
	for _, s := range cons.Missing() {
		if s.Kind != scenario.KindConsumption {
			t.Fatalf("a consumption-only campaign is blamed for %s", s.Name)
		}
	}
}

// step plays one scripted consumption scenario and returns what it reached.
func reached(t *testing.T, sc *scenario.Consumption) coverage.Set {
	t.Helper()
	s := &scenario.Scenario{Version: scenario.Version, Kind: scenario.KindConsumption, Consumption: sc}
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	tr := coverage.NewTracker()
	out, err := runner.Run(s, system.Reference(), tr)
	if err != nil {
		t.Fatal(err)
	}
	tr.Finish(out)
	return tr.Reached()
}

func world(workers int) scenario.Config {
	cfg := scenario.Config{Topic: "orders", Consumers: []string{"ledger"}, Nodes: []scenario.Node{{Name: "n1"}},
		Policy: broker.Policy{MaxAttempts: 3, BackoffMs: 200, MaxBackoffMs: 800, AckTimeoutMs: 1000}, LeaseMs: 200, RetentionMs: 60_000}
	for i := range workers {
		cfg.Workers = append(cfg.Workers, scenario.Worker{Name: []string{"w1", "w2", "w3"}[i], Consumer: "ledger", Node: "n1"})
	}
	return cfg
}

var evt = scenario.Event{ID: "evt-1", OrderID: "ord-1", UserID: "usr-1", AmountCents: 100}

// TestTrackerNamesWhatHappened plays scripted schedules and checks the
// situations each reaches — and that a plain run reaches none of them.
func TestTrackerNamesWhatHappened(t *testing.T) {
	deliver := func(w string) scenario.Step { return scenario.Step{Op: scenario.OpDeliver, Worker: w} }
	step := func(w string) scenario.Step { return scenario.Step{Op: scenario.OpRun, Worker: w} }
	produce := scenario.Step{Op: scenario.OpProduce}
	cases := []struct {
		name   string
		events []scenario.Event
		steps  []scenario.Step
		want   []string
		absent []string
	}{
		{"plain", []scenario.Event{evt}, []scenario.Step{produce, deliver("w1"), step("w1"), step("w1"), step("w1"), step("w1")},
			nil, []string{coverage.TakeoverAfterLeaseExpiry, coverage.ConcurrentClaims, coverage.StaleCommitRefused, coverage.CrashBeforeClaim}},
		{"crash after claim", []scenario.Event{evt}, []scenario.Step{produce, deliver("w1"), step("w1"), {Op: scenario.OpCrash, Worker: "w1"}},
			[]string{coverage.CrashAfterClaim}, []string{coverage.CrashBeforeClaim, coverage.CrashAfterHandle}},
		{"takeover, stale commit", []scenario.Event{evt}, []scenario.Step{produce, deliver("w1"), step("w1"), step("w1"),
			{Op: scenario.OpAdvance, Ms: 1000}, deliver("w2"), step("w2"), step("w1")},
			[]string{coverage.TakeoverAfterLeaseExpiry, coverage.StaleCommitRefused, coverage.RedeliveryAfterAckTimeout}, []string{coverage.TakeoverThenStaleRelease}},
		{"takeover, stale release", []scenario.Event{{ID: "evt-1", Fate: scenario.FateTransient, Transient: 1}}, []scenario.Step{produce, deliver("w1"), step("w1"), step("w1"),
			{Op: scenario.OpAdvance, Ms: 1000}, deliver("w2"), step("w2"), step("w1")},
			[]string{coverage.TakeoverThenStaleRelease}, []string{coverage.StaleCommitRefused}},
		{"concurrent claims", []scenario.Event{evt}, []scenario.Step{produce, {Op: scenario.OpDuplicate, N: 1}, deliver("w1"), deliver("w2"), step("w1"), step("w2")},
			[]string{coverage.ConcurrentClaims, coverage.Duplicate2To10}, []string{coverage.TakeoverAfterLeaseExpiry}},
		{"poison", []scenario.Event{{ID: "evt-1", Fate: scenario.FatePoison}}, []scenario.Step{produce, deliver("w1"), step("w1"), step("w1"), step("w1"), step("w1"), {Op: scenario.OpCrash, Worker: "w1"}},
			[]string{coverage.PoisonToDLQ, coverage.CrashAfterDeadLetter}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := reached(t, &scenario.Consumption{Config: world(2), Events: tc.events, Steps: tc.steps})
			for _, n := range tc.want {
				if !got.Has(n) {
					t.Errorf("did not reach %s; reached %v", n, got.Names())
				}
			}
			for _, n := range tc.absent {
				if got.Has(n) {
					t.Errorf("reached %s, which did not happen; reached %v", n, got.Names())
				}
			}
		})
	}
}

func TestObserverCountsRunsWithoutEnd(t *testing.T) {
	obs := coverage.NewObserver()
	g := gen.Consumption()
	for i := range 3 {
		if _, err := runner.Run(g.Example(i), system.Reference(), obs); err != nil {
			t.Fatal(err)
		}
	}
	if n := obs.Counts().Runs[scenario.KindConsumption]; n != 3 {
		t.Fatalf("counted %d runs without End, want 3", n)
	}
	obs.Reset()
	if obs.Counts().Total() != 0 {
		t.Fatal("Reset kept counts")
	}
}

// An explorer drives a World step by step and forks its tracker with it:
// what one branch reaches after the fork stays out of the other.
func TestCloneIsIndependent(t *testing.T) {
	sc := &scenario.Consumption{Config: world(2), Events: []scenario.Event{evt}}
	tr := coverage.NewTracker()
	w, err := runner.NewWorld(sc, system.Reference().Consumption, tr)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	for i, st := range []scenario.Step{{Op: scenario.OpProduce}, {Op: scenario.OpDeliver, Worker: "w1"}, {Op: scenario.OpRun, Worker: "w1"}} {
		if err := w.Apply(i, st); err != nil {
			t.Fatal(err)
		}
	}
	fork := tr.Clone()
	if fork.Reached() != tr.Reached() || fork.Kind() != scenario.KindConsumption {
		t.Fatalf("a clone differs from its original: %v vs %v", fork.Reached().Names(), tr.Reached().Names())
	}
	if err := w.Apply(3, scenario.Step{Op: scenario.OpCrash, Worker: "w1"}); err != nil {
		t.Fatal(err)
	}
	if !tr.Reached().Has(coverage.CrashAfterClaim) || fork.Reached().Has(coverage.CrashAfterClaim) {
		t.Fatalf("after the crash: original %v, fork %v; want the crash in the original only", tr.Reached().Names(), fork.Reached().Names())
	}
	var c coverage.Counts
	c.AddRun(tr.Kind(), tr.Reached())
	c.AddRun(fork.Kind(), fork.Reached())
	if c.Reached[coverage.CrashAfterClaim] != 1 || c.Runs[scenario.KindConsumption] != 2 {
		t.Fatalf("counts of the two branches: %+v", c)
	}
}

// TestTallyCountsAsAddRun counts the same runs by AddRun and by a Tally.
func TestTallyCountsAsAddRun(t *testing.T) {
	sets := []coverage.Set{0, coverage.Set(0).With(coverage.CrashBeforeClaim), coverage.Set(0).With(coverage.CrashBeforeClaim).With(coverage.ReplayRecoversDLQ), coverage.Set(0).With(coverage.Duplicate2To10)}
	var byRun, byTally coverage.Counts
	var tally coverage.Tally
	for _, s := range sets {
		byRun.AddRun(scenario.KindConsumption, s)
		tally.Add(s)
	}
	byTally.AddTally(scenario.KindConsumption, &tally)
	byTally.AddTally(scenario.KindConsumption, &coverage.Tally{}) // no runs: no entry
	if !reflect.DeepEqual(byRun, byTally) {
		t.Fatalf("a tally counts %+v; AddRun %+v", byTally, byRun)
	}
	want := coverage.Counts{Runs: map[scenario.Kind]int64{scenario.KindConsumption: 4},
		Reached: map[string]int64{coverage.CrashBeforeClaim: 2, coverage.ReplayRecoversDLQ: 1, coverage.Duplicate2To10: 1}}
	if !reflect.DeepEqual(byTally, want) {
		t.Fatalf("counted %+v, want %+v", byTally, want)
	}
}
