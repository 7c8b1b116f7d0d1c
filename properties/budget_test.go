package properties

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/faults/gen"
	"github.com/idemcheck/idemcheck/faults/scenario"
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
