package livelog_test

import (
	"context"
	"slices"
	"testing"

	"github.com/idemcheck/idemcheck/consumertest"
	"github.com/idemcheck/idemcheck/consumertest/handler"
	"github.com/idemcheck/idemcheck/consumertest/laws"
	"github.com/idemcheck/idemcheck/examples/consumers/logapplythencommit"
	"github.com/idemcheck/idemcheck/examples/consumers/logautocommit"
	"github.com/idemcheck/idemcheck/examples/consumers/logcommitfirst"
	"github.com/idemcheck/idemcheck/examples/consumers/logdeadletters"
	"github.com/idemcheck/idemcheck/examples/consumers/logoffsets"
	"github.com/idemcheck/idemcheck/internal/consumerharness"
	"github.com/idemcheck/idemcheck/internal/consumerharness/livelog"
)

func TestLogOffsetsKeepsEveryLawLive(t *testing.T) {
	c := consumertest.Consumer{Name: "logoffsets", Schema: logoffsets.Schema, Log: &logoffsets.Consumer,
		Effects: consumertest.PerEvent(logoffsets.Effects)}
	res, err := livelog.Check(context.Background(), c, livelog.Options{Runs: 4, Seed: 1, Faults: 3})
	if err != nil {
		t.Fatal(err)
	}
	if res.Failed {
		t.Fatalf("logoffsets flagged live: %v\n%v", res.Breaches, res.Run.Lines)
	}
	if res.Runs != 4 || res.Commits == 0 {
		t.Fatalf("want 4 runs with commits, got %+v", res)
	}
	t.Logf("%d runs, %d deliveries, %d commits, %d fenced, unconfirmed %v", res.Runs, res.Deliveries, res.Commits, res.Fenced, res.Unconfirmed)
}

func TestCommitFirstIsCaughtLive(t *testing.T) {
	c := consumertest.Consumer{Name: "logcommitfirst", Schema: logcommitfirst.Schema, Log: &logcommitfirst.Consumer,
		Effects: consumertest.PerEvent(logcommitfirst.Effects)}
	res, err := livelog.Check(context.Background(), c, livelog.Options{Runs: 3, Seed: 1, Faults: 2})
	if err != nil {
		t.Fatal(err)
	}
	// The first commit that lands in a run always precedes its record's
	// effect: no one applies a record before its commit landed.
	if !res.Failed || !slices.ContainsFunc(res.Breaches, func(b consumerharness.Breach) bool { return b.Law == laws.CommitAfterApply }) {
		t.Fatalf("want commit-after-apply confirmed live, got %+v", res)
	}
	t.Log(res.Breaches, res.Run.Lines)
}

func TestApplyThenCommitCreditsTwiceAfterAReplayLive(t *testing.T) {
	c := consumertest.Consumer{Name: "logapplythencommit", Schema: logapplythencommit.Schema, Log: &logapplythencommit.Consumer,
		Effects: consumertest.PerEvent(logapplythencommit.Effects)}
	s := livelog.Draw(1, livelog.Options{})
	s.Steps = []consumerharness.Step{{Op: consumerharness.OpReplay}}
	// The replay fires once a record was applied and committed, and the
	// group's offsets reset to 0 make it applied again: always.
	// A live run on a loaded machine may stall before the replay has
	// anything to apply again: up to three runs.
	var run *livelog.Run
	for range 3 {
		var err error
		if run, err = livelog.Play(context.Background(), c, s); err != nil {
			t.Fatal(err)
		}
		if slices.ContainsFunc(run.Breaches, func(b consumerharness.Breach) bool { return b.Law == laws.SingleCredit }) {
			break
		}
	}
	if !slices.ContainsFunc(run.Breaches, func(b consumerharness.Breach) bool { return b.Law == laws.SingleCredit }) {
		t.Fatalf("want single-credit after the replay, got %v\n%v", run.Breaches, run.Lines)
	}
}

// The record of a run holds its batches and commits: every landed commit
// of logoffsets follows the effects (nothing ahead), every fenced one is
// marked, and the batches cover every record.
func TestTheRunIsRecorded(t *testing.T) {
	c := consumertest.Consumer{Name: "logoffsets", Schema: logoffsets.Schema, Log: &logoffsets.Consumer,
		Effects: consumertest.PerEvent(logoffsets.Effects)}
	s := livelog.Draw(3, livelog.Options{Faults: 2})
	run, err := livelog.Play(context.Background(), c, s)
	if err != nil {
		t.Fatal(err)
	}
	if len(run.Batches) != run.Deliveries || len(run.CommitLog) != run.Commits+run.Fenced || run.Commits == 0 {
		t.Fatalf("record: %d batches for %d deliveries, %d commits logged for %d landed + %d fenced", len(run.Batches), run.Deliveries, len(run.CommitLog), run.Commits, run.Fenced)
	}
	for _, cm := range run.CommitLog {
		if len(cm.Ahead) > 0 {
			t.Fatalf("logoffsets commit %+v ran ahead of the effects", cm)
		}
	}
	covered := map[[2]int64]bool{}
	for _, b := range run.Batches {
		for off := b.First; off <= b.Last; off++ {
			covered[[2]int64{int64(b.Partition), off}] = true
		}
	}
	if len(covered) != len(s.Events) {
		t.Fatalf("batches cover %d records of %d", len(covered), len(s.Events))
	}
}

// firstSeedWith is the first seed from 1 whose drawn scenario (under o)
// has a fault of op.
func firstSeedWith(t *testing.T, o livelog.Options, op consumerharness.StepOp) uint64 {
	t.Helper()
	for seed := uint64(1); seed < 100; seed++ {
		if slices.ContainsFunc(livelog.Draw(seed, o).Steps, func(st consumerharness.Step) bool { return st.Op == op }) {
			return seed
		}
	}
	t.Fatalf("no seed below 100 draws a %s fault", op)
	return 0
}

// logautocommit's automatic commit runs ahead of a batch that failed half
// way: the injected failure of its Handle call comes with an outage of
// its commit interval, kgo's automatic commit after the next poll covers
// the batch, and the commit is judged while the batch is unapplied. A
// rebalance as the group settles at the start can take the partition,
// and the failed batch with it, before the commit (the next owner applies
// it at once): the campaign plays eight scenarios from the first that
// draws a failure, a third of them drawing one.
func TestAutoCommitIsCaughtLive(t *testing.T) {
	c := consumertest.Consumer{Name: "logautocommit", Schema: logautocommit.Schema, Log: &logautocommit.Consumer,
		Effects: consumertest.PerEvent(logautocommit.Effects)}
	o := livelog.Options{Runs: 8, Faults: 1}
	o.Seed = firstSeedWith(t, o, consumerharness.OpFail)
	res, err := livelog.Check(context.Background(), c, o)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Failed || !slices.ContainsFunc(res.Breaches, func(b consumerharness.Breach) bool { return b.Law == laws.CommitAfterApply }) {
		t.Fatalf("want commit-after-apply confirmed live, got:\n%s", res.Report())
	}
	injected := slices.ContainsFunc(res.Run.Batches, func(b livelog.Batch) bool { return b.Injected && b.Error != "" })
	if !injected || !slices.ContainsFunc(res.Run.CommitLog, func(cm livelog.Commit) bool { return cm.Auto && len(cm.Ahead) > 0 }) {
		t.Fatalf("want an injected failure and an automatic commit ahead of the effects in the confirming run, got batches %+v, commits %+v", res.Run.Batches, res.Run.CommitLog)
	}
	t.Log(res.Report())
}

// An injected failure hits one Handle call of logoffsets, which fetches
// the batch again (a later attempt) and keeps every law.
func TestInjectedFailureIsRetriedLive(t *testing.T) {
	c := consumertest.Consumer{Name: "logoffsets", Schema: logoffsets.Schema, Log: &logoffsets.Consumer,
		Effects: consumertest.PerEvent(logoffsets.Effects)}
	s := livelog.Draw(1, livelog.Options{})
	s.Steps = []consumerharness.Step{{Op: consumerharness.OpFail, Worker: 1}}
	// The failure hits the first Handle call that starts once half the
	// records were handled. On a loaded machine every call may have
	// started before that (the last ones waiting on the database): no
	// call gets it. Up to three runs; none may break a law.
	var run *livelog.Run
	i := -1
	for range 3 {
		var err error
		if run, err = livelog.Play(context.Background(), c, s); err != nil {
			t.Fatal(err)
		}
		if len(run.Breaches) > 0 {
			t.Fatalf("logoffsets flagged live after an injected failure: %v\n%v", run.Breaches, run.Lines)
		}
		if i = slices.IndexFunc(run.Batches, func(b livelog.Batch) bool { return b.Injected }); i >= 0 {
			break
		}
		t.Logf("no Handle call got the injected failure: %+v", run.Batches)
	}
	if i < 0 || run.Batches[i].Error == "" {
		t.Fatalf("want one batch failed by the injected failure, got %+v", run.Batches)
	}
	// The next attempt may meet the other member's write lock on the
	// real SQLite file (database is locked) and be fetched again in turn:
	// a later attempt applies it.
	failed := run.Batches[i]
	if !slices.ContainsFunc(run.Batches[i+1:], func(b livelog.Batch) bool {
		return b.Partition == failed.Partition && b.First == failed.First && b.Attempt > failed.Attempt && b.Error == ""
	}) {
		t.Fatalf("want the failed batch %+v handled again at a later attempt, got %+v", failed, run.Batches)
	}
}

// A log consumer's own dead letters, live: the record logdeadletters-
// noretry parks at its injected failure breaks healthy-applied (one
// failure did not spend its attempts); logdeadletters fetches it again
// and applies it.
func TestOwnDeadLettersLive(t *testing.T) {
	consumer := func(name string, lc handler.LogConsumer) consumertest.Consumer {
		return consumertest.Consumer{Name: name, Schema: logdeadletters.Schema, Log: &lc, Effects: consumertest.PerEvent(logdeadletters.Effects),
			Dedupe: "SELECT event_id FROM processed_events", DeadLetters: logdeadletters.DeadLetters}
	}
	s := livelog.Draw(1, livelog.Options{})
	s.Steps = []consumerharness.Step{{Op: consumerharness.OpFail, Worker: 1}}
	run, err := livelog.Play(context.Background(), consumer("logdeadletters-noretry", logdeadletters.ConsumerNoRetry), s)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(run.Breaches, func(b consumerharness.Breach) bool { return b.Law == laws.HealthyApplied }) {
		t.Fatalf("want healthy-applied for the record parked at its first failure, got %v\n%v", run.Breaches, run.Lines)
	}
	run, err = livelog.Play(context.Background(), consumer("logdeadletters", logdeadletters.Consumer), s)
	if err != nil {
		t.Fatal(err)
	}
	if len(run.Breaches) > 0 || !slices.ContainsFunc(run.Batches, func(b livelog.Batch) bool { return b.Injected }) {
		t.Fatalf("want logdeadletters to keep every law through an injected failure, got %v\n%v", run.Breaches, run.Lines)
	}
}
