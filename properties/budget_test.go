package properties

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/faults/gen"
	"github.com/idemcheck/idemcheck/faults/scenario"
	"github.com/idemcheck/idemcheck/impl/contract/clock"
	"github.com/idemcheck/idemcheck/impl/contract/store"
	"github.com/idemcheck/idemcheck/impl/reference/memstore"
	"github.com/idemcheck/idemcheck/impl/system"
	"github.com/idemcheck/idemcheck/internal/hunt"
	"github.com/idemcheck/idemcheck/properties/coverage"
)

// fakeT records what checkLaw reports instead of failing this test.
type fakeT struct {
	hunt.Recorder
	cleanups []func()
	logs     []string
}

func (f *fakeT) Cleanup(fn func()) { f.cleanups = append(f.cleanups, fn) }
func (f *fakeT) Logf(format string, args ...any) {
	f.logs = append(f.logs, fmt.Sprintf(format, args...))
}
func (f *fakeT) done() {
	for i := len(f.cleanups) - 1; i >= 0; i-- {
		f.cleanups[i]()
	}
}

// A law checked on coverage.MinChecks scenarios fails, though it holds, when
// its scenarios never reached a named situation: here the generator has
// crashes switched off.
func TestConformanceFailsOnSituationNeverReached(t *testing.T) {
	fencing, _ := ByName("fencing")
	ft := &fakeT{}
	opts := HuntOptions{Kind: scenario.KindConsumption, Properties: []Property{fencing}, Generator: gen.ConsumptionWithout(scenario.OpCrash)}
	checkLaw(ft, system.Reference(), opts, budget{checks: coverage.MinChecks})
	ft.done()
	if !ft.Failed() || !strings.Contains(ft.Message(), coverage.CrashAfterClaim) {
		t.Fatalf("failed=%t, message %q: want a coverage failure naming %s", ft.Failed(), ft.Message(), coverage.CrashAfterClaim)
	}
	// The same check below MinChecks is not judged.
	small := &fakeT{}
	checkLaw(small, system.Reference(), opts, budget{checks: 200})
	small.done()
	if small.Failed() {
		t.Fatalf("a check of 200 scenarios failed: %s", small.Message())
	}
	// A fixed count spans rapid's rounds of 100 and stops at the count.
	if !strings.Contains(strings.Join(small.logs, "\n"), "200 scenarios checked") {
		t.Fatalf("logs %q: want 200 scenarios checked", small.logs)
	}
}

func TestLawBudget(t *testing.T) {
	if b := lawBudget(Options{Checks: 7}, 3); b.checks != 7 || b.single {
		t.Fatalf("Options.Checks: %+v", b)
	}
	if testing.Short() || rapidFlagsGiven() {
		if b := lawBudget(Options{}, 2); !b.single {
			t.Fatalf("-short or rapid's flags: %+v, want rapid's own count", b)
		}
		return
	}
	if b := lawBudget(Options{}, 2); b.until != DefaultBudget/2 {
		t.Fatalf("default: %+v, want %s per law", b, DefaultBudget/2)
	}
	if b := lawBudget(Options{Budget: time.Second}, 4); b.until != time.Second/4 {
		t.Fatalf("Options.Budget: %+v", b)
	}
	start := time.Now()
	if (budget{checks: 3}).spent(2, start) || !(budget{checks: 3}).spent(3, start) {
		t.Fatal("a fixed count is spent at the count")
	}
	if (budget{single: true}).spent(1<<30, start.Add(-time.Hour)) {
		t.Fatal("rapid's own count is never spent by checkLaw")
	}
	if !(budget{until: time.Millisecond}).spent(0, start.Add(-time.Second)) {
		t.Fatal("a time budget is spent when its time has passed")
	}
}

// A hunt counts the coverage of the scenarios it drew, up to and including
// the failing one, and not what rapid plays while shrinking.
func TestHuntCountsDrawnScenariosOnly(t *testing.T) {
	m, _ := system.Lookup("takeover-without-fencing")
	fencing, _ := ByName("fencing")
	obs := coverage.NewObserver()
	res := Hunt(m, HuntOptions{Kind: scenario.KindConsumption, Properties: []Property{fencing}, Checks: 1000, Seed: 3, NoReduce: true, Coverage: obs})
	if !res.Failed {
		t.Fatal("takeover-without-fencing survived 1000 checks")
	}
	if got := obs.Counts().Total(); got != int64(res.Checks) {
		t.Fatalf("coverage counted %d runs, the hunt drew %d scenarios", got, res.Checks)
	}
	clean := coverage.NewObserver()
	res = Hunt(system.Reference(), HuntOptions{Kind: scenario.KindConsumption, Properties: []Property{fencing}, Checks: 300, Seed: 3, Coverage: clean})
	if res.Failed || clean.Counts().Total() != 300 {
		t.Fatalf("a clean hunt of 300 checks: failed=%t, %d runs counted", res.Failed, clean.Counts().Total())
	}
}

// keepsForever is a correct store with no retention call: its Cleanup
// removes nothing, so no scenario reaches a cleanup situation.
type keepsForever struct{ *memstore.Store }

func (keepsForever) Cleanup(context.Context, int64) ([]store.Key, error) { return nil, nil }

func keepsForeverTarget() system.Target {
	return system.WithStore("keeps-forever", func(c clock.Source) (store.Store, error) { return keepsForever{memstore.New(c)}, nil })
}

// The same store gets the same verdict whatever the number of scenarios:
// a store with no retention call passes replay-unchanged on 200 scenarios
// and on coverage.MinChecks, its cleanup situations excused because it
// offers no retention, not failed once enough scenarios fit in a budget.
func TestNoRetentionSameVerdictSmallAndLarge(t *testing.T) {
	replay, _ := ByName("replay-unchanged")
	opts := HuntOptions{Kind: scenario.KindConsumption, Properties: []Property{replay}}
	for _, n := range []int{200, coverage.MinChecks} {
		ft := &fakeT{}
		checkLaw(ft, keepsForeverTarget(), opts, budget{checks: n})
		ft.done()
		if ft.Failed() {
			t.Fatalf("%d scenarios: failed: %s", n, ft.Message())
		}
	}
	if got := Unreachable(keepsForeverTarget()); got[coverage.CleanupWhileRedeliveryPending] == "" || got[coverage.CleanupReclaimStaleCommit] == "" {
		t.Fatalf("unreachable for a store with no retention: %v, want both cleanup situations", got)
	}
	if got := Unreachable(system.Reference()); len(got) != 0 {
		t.Fatalf("unreachable for the reference: %v, want none", got)
	}
}

// Under a time budget the coverage rule never fails, however many
// scenarios fitted: the same counts fail a check of a fixed count.
func TestTimeBudgetNeverJudgesCoverage(t *testing.T) {
	var counts coverage.Counts
	for range coverage.MinChecks + 1 {
		counts.AddRun(scenario.KindConsumption, 0) // runs that reached nothing
	}
	timed := &fakeT{}
	judgeCoverage(timed, system.Reference(), nil, budget{until: time.Second}, counts)
	if timed.Failed() || !strings.Contains(strings.Join(timed.logs, "\n"), "coverage not judged") {
		t.Fatalf("a time budget: failed=%t (%s), logs %q; want a note, not a failure", timed.Failed(), timed.Message(), timed.logs)
	}
	fixed := &fakeT{}
	judgeCoverage(fixed, system.Reference(), nil, budget{checks: coverage.MinChecks + 1}, counts)
	if !fixed.Failed() || !strings.Contains(fixed.Message(), coverage.TakeoverAfterLeaseExpiry) {
		t.Fatalf("a fixed count: failed=%t, message %q; want a coverage failure", fixed.Failed(), fixed.Message())
	}
}

// What a store's declared conventions rule out is not required of it.
func TestDeclaredConventionsExcuseSituations(t *testing.T) {
	none := declaredUnreachable(store.Conventions{Lease: store.LeaseNone, UnsettledExpiryMs: 1000})
	lib := declaredUnreachable(store.Conventions{Expiry: store.ExpiryByLibrary, ExpiryMs: 1000})
	if none[coverage.TakeoverAfterLeaseExpiry] == "" || none[coverage.CleanupWhileRedeliveryPending] != "" {
		t.Fatalf("a mark with no lease excuses %v", none)
	}
	if lib[coverage.CleanupWhileRedeliveryPending] == "" || lib[coverage.TakeoverAfterLeaseExpiry] != "" {
		t.Fatalf("an expiry by the library excuses %v", lib)
	}
	if err := retentionProbe().Validate(); err != nil {
		t.Fatalf("the retention probe: %v", err)
	}
}
