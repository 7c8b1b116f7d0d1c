package deadline_test

import (
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/consumertest"
	"github.com/idemcheck/idemcheck/consumertest/laws"
	"github.com/idemcheck/idemcheck/consumertest/scenario"
	"github.com/idemcheck/idemcheck/examples/consumers/deadline"
	"github.com/idemcheck/idemcheck/impl/contract/handler"
)

func consumer(name string, h handler.Func) consumertest.Consumer {
	return consumertest.Consumer{
		Name:    name,
		Schema:  deadline.Schema,
		Handler: h,
		Effects: consumertest.PerEvent("SELECT event_id, amount_cents FROM ledger"),
		Dedupe:  "SELECT event_id FROM processed_events",
	}
}

var (
	timeout  = consumer("deadline", deadline.Handle)
	cancel   = consumer("deadline-cancel", deadline.HandleCancel)
	rollback = consumer("deadline-cancel-rollback", deadline.HandleCancelRollback)
	split    = consumer("deadline-split", deadline.HandleSplit)
)

func pgDSN(t *testing.T) string {
	t.Helper()
	dsn := os.Getenv(consumertest.PostgresEnv)
	if dsn == "" {
		t.Skipf("%s is not set: skipping the deadline consumers on PostgreSQL", consumertest.PostgresEnv)
	}
	return dsn
}

func TestTheDeadlineIsNeverFlagged(t *testing.T) {
	consumertest.Check(t, timeout, consumertest.Checks(300))
}

func TestTheDeadlineIsNeverFlaggedOnPostgres(t *testing.T) {
	consumertest.Check(t, timeout, consumertest.Checks(60), consumertest.Postgres(pgDSN(t)))
}

func TestACancelAfterCommitIsNeverFlagged(t *testing.T) {
	consumertest.Check(t, cancel, consumertest.Checks(300))
}

// TestACancelThatRollsBackIsNeverFlagged is skipped: the harness flags
// this correct consumer (see the package documentation). Two false alarms
// of law runs, both from the rollback database/sql makes on its own
// goroutine when the context is cancelled:
//
//   - an injected failure, then cancel(): "the handler returned with a
//     transaction still open" (Hunt seed 2: the rollback is still waiting
//     to be scheduled when the handler's return is judged);
//   - a crash: "goroutines were left blocked when the scenario ended:
//     database/sql's watchers of a transaction" (Hunt seed 1: the crash
//     ends the handler before its cancel(), and the harness never cancels
//     the delivery's context, so database/sql's watcher waits forever; in
//     production the process is gone).
func TestACancelThatRollsBackIsNeverFlagged(t *testing.T) {
	consumertest.Check(t, rollback, consumertest.Checks(300))
}

// TestTheDeadlineIsVerified: every schedule of an event, its duplicate
// and two workers, with time moving by the whole deadline once, anywhere:
// an expiry in the middle of the transaction rolls it all back.
func TestTheDeadlineIsVerified(t *testing.T) {
	consumertest.Verify(t, timeout, consumertest.Bounds{
		Events: []scenario.Fate{scenario.FateOK}, Workers: 2, Preemptions: 1, Duplicates: 1,
		Advances: 1, Durations: []time.Duration{deadline.Timeout},
	}, consumertest.CorpusDir(t.TempDir()))
}

// TestACancelAfterCommitIsVerified: one worker, a crash, an injected
// failure and a duplicate, anywhere.
func TestACancelAfterCommitIsVerified(t *testing.T) {
	consumertest.Verify(t, cancel, consumertest.Bounds{
		Events: []scenario.Fate{scenario.FateOK}, Workers: 1, Crashes: 1, Failures: 1, Duplicates: 1,
	}, consumertest.CorpusDir(t.TempDir()))
}

// TestASplitUnderADeadlineCreditsTwice: Hunt (seed 1) finds the credit
// committed without its mark.
func TestASplitUnderADeadlineCreditsTwice(t *testing.T) {
	res, err := consumertest.Hunt(split, consumertest.Seed(1), consumertest.CorpusDir(t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	if !res.Failed || res.Law != laws.SingleCredit || res.Scenario.Size() > 8 {
		t.Fatalf("want single-credit broken by a scenario of at most 8 steps, got:\n%s", res.Report())
	}
	t.Logf("found after %d scenario(s):\n%s", res.Checks, res.Report())
}

// TestTheExpiredDeadlineLeavesTheCreditUnmarked: with one worker, no
// crash, no duplicate and no injected failure, only the deadline can
// break the split, and Verify finds it: time moves by the deadline while
// the worker is at its commit, the mark after it fails on the expired
// context, and the redelivery credits again.
func TestTheExpiredDeadlineLeavesTheCreditUnmarked(t *testing.T) {
	res, err := consumertest.Explore(split, consumertest.Bounds{
		Events: []scenario.Fate{scenario.FateOK}, Workers: 1,
		Advances: 1, Durations: []time.Duration{deadline.SplitTimeout},
	}, consumertest.CorpusDir(t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	if !res.Failed || res.Law != laws.SingleCredit {
		t.Fatalf("want single-credit broken, got:\n%s", res.Report())
	}
	trace := res.Outcome.Trace.String()
	for _, want := range []string{"time moves 10000ms", `nacks e1: "context deadline exceeded"`} {
		if !strings.Contains(trace, want) {
			t.Errorf("the counterexample's trace lacks %q:\n%s", want, res.Report())
		}
	}
	// Without time moving, nothing breaks it within the same bounds.
	calm, err := consumertest.Explore(split, consumertest.Bounds{Events: []scenario.Fate{scenario.FateOK}, Workers: 1},
		consumertest.CorpusDir(t.TempDir()))
	if err != nil || !calm.Verified {
		t.Fatalf("without the stall the split is flagged (%v):\n%s", err, calm.Report())
	}
}

// stall is one more seed input for the fuzz targets: a worker runs into
// its transaction, then stalls for a minute, past every deadline.
func stall(f *testing.F) {
	f.Helper()
	s := &scenario.Scenario{Version: scenario.Version, Workers: 1, Policy: scenario.DefaultPolicy,
		Events: []scenario.Event{{ID: "e1", User: "u1", Amount: 100}}}
	for range 5 {
		s.Steps = append(s.Steps, scenario.Step{Op: scenario.OpRun, Worker: 1})
	}
	s.Steps = append(s.Steps, scenario.Step{Op: scenario.OpAdvance, Ms: 60000})
	in, err := scenario.FuzzInput(s)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(in)
}

// FuzzDeadline fuzzes the correct consumer: go test plays the seed inputs.
func FuzzDeadline(f *testing.F) {
	stall(f)
	consumertest.Fuzz(f, timeout)
}

// FuzzDeadlineCancel fuzzes the consumer that cancels after its commit.
func FuzzDeadlineCancel(f *testing.F) {
	stall(f)
	consumertest.Fuzz(f, cancel)
}

// fuzzEnv switches FuzzDeadlineSplit on: the consumer is broken, so a
// plain go test must not fail on it; TestFuzzCatchesTheSplit runs it.
const fuzzEnv = "IDEMCHECK_FUZZ_BROKEN"

// FuzzDeadlineSplit fuzzes the broken consumer.
func FuzzDeadlineSplit(f *testing.F) {
	if os.Getenv(fuzzEnv) != "1" {
		f.Skipf("a broken consumer: set %s=1 to fuzz it", fuzzEnv)
	}
	stall(f)
	consumertest.Fuzz(f, split, consumertest.CorpusDir(f.TempDir()))
}

// TestFuzzCatchesTheSplit runs FuzzDeadlineSplit's seed inputs, as plain
// go test does, in a child process: the stall must fail with
// single-credit.
func TestFuzzCatchesTheSplit(t *testing.T) {
	if os.Getenv(fuzzEnv) == "1" {
		t.Skip("running inside the child")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^FuzzDeadlineSplit$")
	cmd.Env = append(os.Environ(), fuzzEnv+"=1")
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 || !strings.Contains(string(out), `consumer "deadline-split" breaks single-credit`) {
		t.Fatalf("the seed inputs did not fail with single-credit (%v):\n%s", err, out)
	}
}
