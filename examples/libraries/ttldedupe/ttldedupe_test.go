package ttldedupe_test

import (
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/idemcheck/idemcheck/examples/libraries/ttldedupe"
	"github.com/idemcheck/idemcheck/faults/scenario"
	"github.com/idemcheck/idemcheck/impl/adapter/synctime"
	"github.com/idemcheck/idemcheck/impl/contract/clock"
	"github.com/idemcheck/idemcheck/impl/contract/store"
	"github.com/idemcheck/idemcheck/impl/contract/store/storetest"
	"github.com/idemcheck/idemcheck/impl/system"
	"github.com/idemcheck/idemcheck/linearizability"
	"github.com/idemcheck/idemcheck/properties"
)

// conventions are the library's documented ones.
var conventions = store.Conventions{
	LeaseEnd:      store.LeaseEndInclusive,
	FailedAttempt: store.FailedAttemptDeleted,
	StaleRelease:  store.StaleReleaseNoOp,
}

func TestContract(t *testing.T) {
	storetest.Run(t, func(t *testing.T, c clock.Source) store.Store { return ttldedupe.New(c) }, conventions)
}

func TestInvariants(t *testing.T) {
	properties.Conformance(t, system.WithStore("ttldedupe", func(c clock.Source) (store.Store, error) { return ttldedupe.New(c), nil }),
		properties.Options{Conventions: &conventions, Checks: 100})
}

func TestLinearizable(t *testing.T) {
	linearizability.CheckStore(t, func(c clock.Source) store.Store { return ttldedupe.New(c) },
		linearizability.WithConventions(conventions), linearizability.WithOps(2_000))
}

// Version 1's per-key tokens restart once a failed key is deleted: a late
// worker's token is the next holder's. The linearizability check, under
// the same declared conventions, catches it.
func TestVersion1IsCaught(t *testing.T) {
	for seed := uint64(1); seed <= 5; seed++ {
		cfg := linearizability.DefaultConfig()
		cfg.Ops, cfg.Keys, cfg.Seed, cfg.Conventions = 2_000, 100, seed, conventions
		h, err := linearizability.Record(t.Context(), func(c clock.Source) store.Store { return ttldedupe.NewV1(c) }, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if r := linearizability.Check(h, time.Minute); r.Verdict == linearizability.Violation {
			t.Logf("caught with seed %d: %s", seed, r)
			return
		}
	}
	t.Fatal("version 1 survived five recordings")
}

// Default reads time.Now and takes no clock: the whole check runs in a
// testing/synctest bubble whose clock synctime keeps at the harness's time.
// The library is never flagged; version 0, which read leases as seconds,
// leaves an event stuck behind a crashed worker's lease.
func TestReadsTimeNow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		for _, c := range []struct {
			name    string
			open    func() *ttldedupe.Table
			failing string
		}{{"ttldedupe", ttldedupe.Default, ""}, {"ttldedupe-v0", ttldedupe.DefaultV0, "nothing-lost/not-stuck"}} {
			target := system.WithStoreConventions(c.name, conventions, synctime.Store(func() (store.Store, error) { return c.open(), nil }))
			results := properties.HuntEach(target, properties.HuntOptions{
				Kind: scenario.KindConsumption, Properties: properties.ForKind(scenario.KindConsumption), Checks: 300, Seed: 3,
			})
			var broken []string
			for _, r := range results {
				broken = append(broken, r.Law)
			}
			switch {
			case c.failing == "" && len(broken) > 0:
				t.Errorf("%s flagged: %v\n%s", c.name, broken, properties.Report(results[0].Verdict, results[0].Outcome, properties.ReportOptions{}))
			case c.failing != "" && !slices.Contains(broken, c.failing):
				t.Errorf("%s: laws broken %v, want %s among them: %s", c.name, broken, c.failing, results[0].Message)
			}
		}
	})
}

// The invariants alone catch version 1 too, well within Conformance's
// default budget: the generator plays takeovers whose new holder fails (the
// key is deleted, version 1's tokens restart) while the slow worker still
// holds its token, and cleanups followed by a re-claim and a stale commit.
// A hunt of fencing stands in for Conformance, whose failure would fail
// this test.
func TestVersion1IsCaughtByTheInvariants(t *testing.T) {
	v1 := system.WithStoreConventions("ttldedupe-v1", conventions, func(c clock.Source) (store.Store, error) { return ttldedupe.NewV1(c), nil })
	fencing, _ := properties.ByName("fencing")
	for seed := uint64(1); seed <= 3; seed++ {
		res := properties.Hunt(v1, properties.HuntOptions{Kind: scenario.KindConsumption, Properties: []properties.Property{fencing},
			Checks: 2000, Seed: seed, NoReduce: true})
		if !res.Failed {
			t.Fatalf("seed %d: version 1 survived 2000 scenarios of fencing", seed)
		}
		t.Logf("seed %d: %s after %d scenarios", seed, res.Law, res.Checks)
	}
}

// marking are the conventions of marking mode: the library's three, and a
// claim that marks the key before the handler runs.
var marking = store.Conventions{
	LeaseEnd:      store.LeaseEndInclusive,
	FailedAttempt: store.FailedAttemptDeleted,
	StaleRelease:  store.StaleReleaseNoOp,
	ClaimMark:     store.ClaimMarkOnClaim,
}

// Marking mode declares mark-on-claim and is checked all three ways under
// it, never flagged.
func TestMarkingMode(t *testing.T) {
	open := func(c clock.Source) store.Store { return ttldedupe.NewMarking(c) }
	storetest.Run(t, func(t *testing.T, c clock.Source) store.Store { return open(c) }, marking)
	properties.Conformance(t, system.WithStore("ttldedupe-marking", func(c clock.Source) (store.Store, error) { return open(c), nil }),
		properties.Options{Conventions: &marking, Checks: 100})
	linearizability.CheckStore(t, open, linearizability.WithConventions(marking), linearizability.WithOps(2_000))
}

// Marking mode's version 1 never let the mark expire: declaring
// mark-on-claim does not excuse it. A worker that crashes after its claim
// leaves the event unprocessed for ever, and nothing-lost says so.
func TestMarkingV1IsCaught(t *testing.T) {
	v1 := system.WithStoreConventions("ttldedupe-marking-v1", marking, func(c clock.Source) (store.Store, error) { return ttldedupe.NewMarkingV1(c), nil })
	res := properties.Hunt(v1, properties.HuntOptions{Kind: scenario.KindConsumption, Properties: properties.ForKind(scenario.KindConsumption),
		Laws: []string{"nothing-lost/not-stuck"}, Checks: 1000, Seed: 1, NoReduce: true})
	if !res.Failed {
		t.Fatalf("marking version 1 survived %d scenarios of nothing-lost/not-stuck", res.Checks)
	}
	t.Logf("%s after %d scenarios", res.Law, res.Checks)
	// The report says what happened: the library answered "processed" for
	// an event it never processed — a loss, not a record left waiting —
	// and the trace shows the answer the conventions rewrote.
	report := properties.Report(res.Verdict, res.Outcome, properties.ReportOptions{})
	for _, want := range []string{"an event is lost", "the store answered processed; read as locked under mark-on-claim"} {
		if !strings.Contains(report, want) {
			t.Errorf("the report does not say %q:\n%s", want, report)
		}
	}
	if strings.Contains(report, "stuck in processing") {
		t.Errorf("the report calls the loss stuck:\n%s", report)
	}
}

// A law that does not apply to a design is switched off with the reason:
// nobody judges it, and the verdict records why. Marking version 1's marks
// never expire, which not-stuck catches; a team that clears stuck marks by
// hand may switch the law off, and the counterexample then passes with the
// reason on record, while every other law still judges.
func TestLawOffWithReason(t *testing.T) {
	const reason = "stuck marks are cleared by the on-call runbook (ADR-3)"
	off := map[string]string{"nothing-lost/not-stuck": reason}
	target := system.WithStoreConventions("ttldedupe-marking-v1", marking, func(c clock.Source) (store.Store, error) { return ttldedupe.NewMarkingV1(c), nil })
	nothingLost, _ := properties.ByName("nothing-lost")
	opts := properties.HuntOptions{Kind: scenario.KindConsumption, Properties: []properties.Property{nothingLost}, Checks: 1000, Seed: 1}
	caught := properties.Hunt(target, opts)
	if !caught.Failed || caught.Law != "nothing-lost/not-stuck" {
		t.Fatalf("with every law on: failed=%v law=%q after %d checks, want not-stuck", caught.Failed, caught.Law, caught.Checks)
	}
	_, verdicts, err := properties.Judge(caught.Scenario, target, []properties.Property{nothingLost}, properties.JudgeOptions{Off: off})
	if err != nil {
		t.Fatal(err)
	}
	if v := verdicts[0]; !v.Pass || v.Off["not-stuck"] != reason {
		t.Fatalf("the counterexample with not-stuck off: pass=%v off=%v, want a pass that records the reason", v.Pass, v.Off)
	}
	opts.Off, opts.NoReduce = off, true
	if res := properties.Hunt(target, opts); res.Failed && res.Law == "nothing-lost/not-stuck" {
		t.Errorf("a law switched off was judged: %s", res.Law)
	}
}
