package nowdedupe_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/examples/libraries/nowdedupe"
	"github.com/idemcheck/idemcheck/faults/scenario"
	"github.com/idemcheck/idemcheck/impl/adapter/synctime"
	"github.com/idemcheck/idemcheck/impl/contract/store"
	"github.com/idemcheck/idemcheck/impl/contract/store/storetest"
	"github.com/idemcheck/idemcheck/impl/system"
	"github.com/idemcheck/idemcheck/internal/timepatch"
	"github.com/idemcheck/idemcheck/linearizability"
	"github.com/idemcheck/idemcheck/properties"
)

// lib describes the library once for every check: it reads time.Now, so
// each rule, scenario and recording plays in a testing/synctest bubble of
// its own, whose clock follows the harness's.
var lib = synctime.Library{Open: func() (store.Store, error) { return nowdedupe.New(), nil }}

func TestContract(t *testing.T) {
	storetest.Run(t, lib)
}

func TestInvariants(t *testing.T) {
	properties.Conformance(t, system.WithTimeNowStore("nowdedupe", lib), properties.Options{Checks: 100})
}

func TestOneProperty(t *testing.T) {
	properties.CheckProperty(t, system.WithTimeNowStore("nowdedupe", lib), "fencing", properties.Options{Checks: 200})
}

func TestLinearizable(t *testing.T) {
	linearizability.CheckStore(t, lib, linearizability.WithOps(2_000))
}

// consumption hunts every consumption law, each scenario in its own bubble
// of t's.
func consumption(t *testing.T, checks int) properties.HuntOptions {
	return properties.HuntOptions{Kind: scenario.KindConsumption, Properties: properties.ForKind(scenario.KindConsumption),
		Checks: checks, Seed: 1, NoReduce: true, T: t}
}

// Version 1 leaves its sweeper running after every scenario: reported as
// a leak with the goroutine's stack, not a harness panic. A library that
// cannot stop it says why, and the goroutines are then tolerated.
func TestVersion1LeakIsAFinding(t *testing.T) {
	v1 := synctime.Library{Open: func() (store.Store, error) { return nowdedupe.NewV1(), nil }}
	res := properties.Hunt(system.WithTimeNowStore("nowdedupe-v1", v1), consumption(t, 20))
	if !res.Failed || res.Law != properties.LeakLaw {
		t.Fatalf("version 1: failed=%v law=%q, want %s", res.Failed, res.Law, properties.LeakLaw)
	}
	report := properties.Report(res.Verdict, res.Outcome, properties.ReportOptions{})
	if !strings.Contains(report, "nowdedupe.(*Repo).sweep") {
		t.Fatalf("the leak does not show the sweeper's stack:\n%s", report)
	}
	v1.Lingering = "the sweeper lives as long as the process (version 1 has no Close)"
	if res := properties.Hunt(system.WithTimeNowStore("nowdedupe-v1", v1), consumption(t, 20)); res.Failed {
		t.Fatalf("with the lingering goroutines declared: %s %s", res.Law, res.Message)
	}
}

// A repository that writes the effect and then the mark keeps its two
// writes through the time.Now wrapper: a crash between them is played, and
// the trace shows the effect landing without its mark.
func TestSplitCommitKeepsItsTwoWrites(t *testing.T) {
	split := synctime.Library{Open: func() (store.Store, error) { return nowdedupe.NewSplit(), nil }}
	atomicity, _ := properties.ByName("atomicity")
	opts := consumption(t, 500)
	opts.Properties = []properties.Property{atomicity}
	res := properties.Hunt(system.WithTimeNowStore("nowdedupe-split", split), opts)
	if !res.Failed || res.Law != "atomicity/effect-with-mark" {
		t.Fatalf("split commits: failed=%v law=%q, want atomicity", res.Failed, res.Law)
	}
	if report := properties.Report(res.Verdict, res.Outcome, properties.ReportOptions{}); !strings.Contains(report, "writes the effect alone") {
		t.Fatalf("the trace does not show the effect's own write:\n%s", report)
	}
}

// Something else in the process replaced time.Now (a monkey patch another
// test left in place): every scenario fails to play, and the reason says
// so, instead of a bare "the runner could not play the scenario".
func TestAPatchedTimeNowIsNamed(t *testing.T) {
	restore, err := timepatch.Now(func() time.Time { return time.Date(2031, 1, 2, 3, 4, 5, 0, time.UTC) })
	if errors.Is(err, timepatch.ErrUnsupported) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	res := properties.Hunt(system.WithTimeNowStore("nowdedupe", lib), consumption(t, 5))
	restore()
	if !res.Failed || res.Law != properties.RunnerLaw || !strings.Contains(strings.Join(res.Verdict.Details, "\n"), "replaced") {
		t.Fatalf("under a patched time.Now: failed=%v law=%q details %v", res.Failed, res.Law, res.Verdict.Details)
	}
	t.Log(res.Verdict.Details[0])
}
