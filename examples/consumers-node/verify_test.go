package consumersnode_test

import (
	"testing"

	"github.com/idemcheck/idemcheck/consumertest"
	"github.com/idemcheck/idemcheck/consumertest/laws"
	"github.com/idemcheck/idemcheck/consumertest/scenario"
	"github.com/idemcheck/idemcheck/impl/adapter/consumerproc"
)

// The model checker against the Node.js consumers. Verify plays every
// schedule from the start, so each schedule's workers start anew; the
// pool's processes, reset for each worker, serve them as they serve the
// scenarios of a campaign, and a reset process is to the consumer a fresh
// one, so the verdicts are those of fresh processes.

// smallBounds are bounds a unit test affords on a process consumer: one
// event and its duplicate, two workers, one preemption, one crash.
var smallBounds = consumertest.Bounds{Events: []scenario.Fate{scenario.FateOK}, Workers: 2, Preemptions: 1, Crashes: 1, Duplicates: 1}

// TestVerifyReusesProcesses: the search of insert-first.js within small
// bounds verifies it, and its hundreds of workers (two per schedule, and
// one per crash) run on the few processes the pool started: reset and
// reused, not started.
func TestVerifyReusesProcesses(t *testing.T) {
	d := declared(t, "insert-first.js")
	pl := consumerproc.NewPool([]string{node(t), "insert-first.js"}, consumerproc.Options{})
	defer pl.Close()
	c := consumertest.Consumer{Name: "insert-first", Schema: d.Schema, Worker: pl.Worker, Effects: consumertest.PerEvent(d.Effects)}
	res, err := consumertest.Explore(c, smallBounds, consumertest.CorpusDir(t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	if !res.Verified {
		t.Fatalf("insert-first.js not verified:\n%s", res.Report())
	}
	st := pl.Stats()
	// Two workers, a restart after a crash, and a spare at most at once;
	// the reaper may kill idle ones on a loaded machine, hence the slack.
	if st.Started > 2*consumerproc.DefaultMaxIdle {
		t.Errorf("%d schedules started %d processes (stats %+v): the pool did not serve them", res.Schedules, st.Started, st)
	}
	if int64(st.Reused) < res.Schedules {
		t.Errorf("%d schedules reused processes %d times (stats %+v), want at least once each", res.Schedules, st.Reused, st)
	}
	t.Logf("%d schedules on %d processes (%d reuses)", res.Schedules, st.Started, st.Reused)
}

// verifyBroken are the bounds within which Verify finds each broken
// consumer breaking the law a campaign catches it by (broken): the
// consumer's own verdict does not depend on the search.
var verifyBroken = []struct {
	file   string
	law    string
	bounds consumertest.Bounds
}{
	{"effect-then-mark.js", laws.SingleCredit, smallBounds},
	{"check-then-act.js", laws.SingleCredit, consumertest.Bounds{Events: []scenario.Fate{scenario.FateOK}, Workers: 2, Preemptions: 1, Duplicates: 1}},
	{"lru.js", laws.SingleCredit, smallBounds},
	{"mark-first.js", laws.NothingLost, smallBounds},
}

// TestVerifyFindsBroken: each broken consumer is found under Verify on
// reused processes, breaking its law, and the counterexample replays with
// the same trace on them.
func TestVerifyFindsBroken(t *testing.T) {
	for _, b := range verifyBroken {
		t.Run(b.file, func(t *testing.T) {
			if !hasLaw(b.file, b.law) {
				t.Fatalf("%s: %s is not the law a campaign catches it by", b.file, b.law)
			}
			c := consumer(t, b.file)
			res, err := consumertest.Explore(c, b.bounds, consumertest.CorpusDir(t.TempDir()))
			if err != nil {
				t.Fatal(err)
			}
			if !res.Failed {
				t.Fatalf("not found within %s:\n%s", b.bounds, res.Report())
			}
			if !breaks(res.Breaches, b.law) {
				t.Fatalf("the counterexample breaks %s, not %s:\n%s", res.Law, b.law, res.Report())
			}
			again, err := consumertest.Replay(c, res.Scenario)
			if err != nil || !again.Failed || again.Outcome.Trace.String() != res.Outcome.Trace.String() {
				t.Fatalf("the counterexample does not replay with the same trace (%v):\n%s", err, again.Report())
			}
			t.Logf("%s in %d step(s), %d preemption(s); %d schedules in %s", res.Law, res.Scenario.Size(), res.Preemptions, res.Schedules, res.Elapsed)
		})
	}
}

// hasLaw reports whether broken names law for file.
func hasLaw(file, law string) bool {
	for _, b := range broken {
		if b.file == file {
			return b.law == law
		}
	}
	return false
}

func breaks(bs []laws.Breach, law string) bool {
	for _, b := range bs {
		if b.Law == law {
			return true
		}
	}
	return false
}

// TestVerifySameOnFreshProcesses: reuse changes nothing the search
// decides. lru.js, whose memory its reset must drop, searched on the
// pool's reused processes and on a process started for every worker (as a
// process that does not declare reset is served), gives the same
// counterexample with the same trace, after the same schedules and states.
func TestVerifySameOnFreshProcesses(t *testing.T) {
	d := declared(t, "lru.js")
	search := func(maxIdle int) (consumertest.VerifyResult, consumerproc.Stats) {
		pl := consumerproc.NewPool([]string{node(t), "lru.js"}, consumerproc.Options{MaxIdle: maxIdle})
		defer pl.Close()
		c := consumertest.Consumer{Name: "lru", Schema: d.Schema, Worker: pl.Worker, Effects: consumertest.PerEvent(d.Effects)}
		// A first search leaves the pool's processes with memory to
		// forget.
		if _, err := consumertest.Explore(c, smallBounds, consumertest.CorpusDir(t.TempDir())); err != nil {
			t.Fatal(err)
		}
		res, err := consumertest.Explore(c, smallBounds, consumertest.CorpusDir(t.TempDir()))
		if err != nil {
			t.Fatal(err)
		}
		return res, pl.Stats()
	}
	pooled, pst := search(0)
	fresh, fst := search(-1)
	if pst.Reused == 0 || fst.Reused != 0 {
		t.Fatalf("reused %d processes on the pool and %d fresh; want some and none", pst.Reused, fst.Reused)
	}
	if !pooled.Failed || !fresh.Failed {
		t.Fatalf("failed on the pool %v, fresh %v; want both", pooled.Failed, fresh.Failed)
	}
	if pooled.Law != fresh.Law || pooled.Schedules != fresh.Schedules || pooled.States != fresh.States ||
		pooled.Outcome.Trace.String() != fresh.Outcome.Trace.String() {
		t.Fatalf("the pool's search differs from the fresh processes':\npool:\n%s\nfresh:\n%s", pooled.Report(), fresh.Report())
	}
}
