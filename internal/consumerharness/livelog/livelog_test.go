package livelog_test

import (
	"context"
	"slices"
	"testing"

	"github.com/idemcheck/idemcheck/consumertest"
	"github.com/idemcheck/idemcheck/consumertest/laws"
	"github.com/idemcheck/idemcheck/examples/consumers/logapplythencommit"
	"github.com/idemcheck/idemcheck/examples/consumers/logcommitfirst"
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
