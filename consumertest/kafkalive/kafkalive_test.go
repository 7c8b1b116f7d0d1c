package kafkalive_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/idemcheck/idemcheck/consumertest"
	"github.com/idemcheck/idemcheck/consumertest/kafkalive"
	"github.com/idemcheck/idemcheck/consumertest/laws"
	"github.com/idemcheck/idemcheck/examples/consumers/logautocommit"
	"github.com/idemcheck/idemcheck/examples/consumers/logcommitfirst"
	"github.com/idemcheck/idemcheck/examples/consumers/logoffsets"
	"github.com/idemcheck/idemcheck/internal/consumerharness"
)

// logoffsets keeps every law over several live runs with crashes,
// rebalances and replays.
func TestLogOffsetsLive(t *testing.T) {
	res := kafkalive.Check(t, consumertest.Consumer{Name: "logoffsets", Schema: logoffsets.Schema, Log: &logoffsets.Consumer,
		Effects: consumertest.PerEvent(logoffsets.Effects)}, kafkalive.Options{Runs: 5, Seed: 7, Faults: 3})
	if res.Runs != 5 || res.Commits == 0 {
		t.Fatalf("want 5 runs that commit, got %d runs, %d commits", res.Runs, res.Commits)
	}
}

// logcommitfirst's commits land ahead of their records' effects whatever
// the broker's timing, so a run that plays its records catches it. A live
// run on a loaded machine may stall before it plays enough to confirm
// (a live run's timing is never a verdict): the campaign gets three runs.
func TestCommitFirstLive(t *testing.T) {
	res, err := kafkalive.Run(context.Background(), consumertest.Consumer{Name: "logcommitfirst", Schema: logcommitfirst.Schema,
		Log: &logcommitfirst.Consumer, Effects: consumertest.PerEvent(logcommitfirst.Effects)}, kafkalive.Options{Runs: 3, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	// Other laws (nothing-lost after a crash between a commit and its
	// effect, single-credit after a replay) may be confirmed beside it.
	if !res.Failed || !slices.ContainsFunc(res.Breaches, func(b consumerharness.Breach) bool { return b.Law == laws.CommitAfterApply }) {
		t.Fatalf("want commit-after-apply confirmed, got:\n%s", res.Report())
	}
}

// logautocommit is caught live once a run injects a failure into its
// Handle: kgo's automatic commit lands during the outage that comes with
// the failure, past the batch it left unapplied. Seeds 2, 6 and 11 draw
// a fail among these runs' one fault each; a rebalance that takes the
// failed batch before the commit spares the consumer in a run, so the
// campaign gets ten.
func TestAutoCommitLive(t *testing.T) {
	res, err := kafkalive.Run(context.Background(), consumertest.Consumer{Name: "logautocommit", Schema: logautocommit.Schema,
		Log: &logautocommit.Consumer, Effects: consumertest.PerEvent(logautocommit.Effects)}, kafkalive.Options{Runs: 10, Seed: 2, Faults: 1})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Failed || res.Law != laws.CommitAfterApply || !strings.Contains(res.Report(), "injected") {
		t.Fatalf("want commit-after-apply confirmed after an injected failure, got:\n%s", res.Report())
	}
	t.Log(res.Report())
}
