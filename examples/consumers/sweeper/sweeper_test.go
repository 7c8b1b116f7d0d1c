package sweeper_test

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/consumertest"
	"github.com/idemcheck/idemcheck/consumertest/laws"
	"github.com/idemcheck/idemcheck/consumertest/scenario"
	"github.com/idemcheck/idemcheck/examples/consumers/sweeper"
	"github.com/idemcheck/idemcheck/impl/contract/handler"
)

// lingering is why the never-closed store's sweeper may outlive a worker.
const lingering = "the key store's clean-up runs for the life of the process"

func consumer(name string, w handler.Worker, lingering string) consumertest.Consumer {
	return consumertest.Consumer{
		Name:      name,
		Schema:    sweeper.Schema,
		Worker:    w,
		Effects:   consumertest.PerEvent("SELECT event_id, amount_cents FROM ledger"),
		Dedupe:    "SELECT idem_key FROM idempotency_keys",
		Lingering: lingering,
	}
}

var (
	closed     = consumer("sweeper", sweeper.NewWorker, "")
	declared   = consumer("sweeper-lingering", sweeper.NewWorkerNeverClosed, lingering)
	undeclared = consumer("sweeper-undeclared", sweeper.NewWorkerNeverClosed, "")
	one        = []scenario.Fate{scenario.FateOK}
	aMinute    = []time.Duration{time.Minute}
)

func TestAClosedSweeperIsNeverFlagged(t *testing.T) {
	consumertest.Check(t, closed, consumertest.Checks(300))
}

func TestADeclaredSweeperIsNeverFlagged(t *testing.T) {
	consumertest.Check(t, declared, consumertest.Checks(300))
}

func TestOnPostgres(t *testing.T) {
	dsn := os.Getenv(consumertest.PostgresEnv)
	if dsn == "" {
		t.Skipf("%s is not set: skipping the sweeper on PostgreSQL", consumertest.PostgresEnv)
	}
	for _, c := range []consumertest.Consumer{closed, declared} {
		consumertest.Check(t, c, consumertest.Checks(60), consumertest.Postgres(dsn))
	}
}

// TestTheSweepsRunBetweenTheSteps: time moving by a minute makes each
// worker's sweeper run its DELETE, an actor of its own ("w1.bg1"), waiting
// for the lock while a worker's transaction holds it; a crash ends the
// crashed worker's sweeper with it. It runs SQLite as the team does,
// BEGIN IMMEDIATE and a busy timeout, so that w1's transaction holds the
// write lock from its BEGIN (with SQLite's deferred BEGIN, the sweeps
// would not wait there).
func TestTheSweepsRunBetweenTheSteps(t *testing.T) {
	s := &scenario.Scenario{Version: scenario.Version, Workers: 2, Policy: scenario.DefaultPolicy,
		Events: []scenario.Event{{ID: "e1", User: "u1", Amount: 100}},
		Steps: []scenario.Step{{Op: scenario.OpRun, Worker: 1}, {Op: scenario.OpRun, Worker: 1},
			{Op: scenario.OpAdvance, Ms: 60000}, {Op: scenario.OpCrash, Worker: 2}, {Op: scenario.OpRun, Worker: 1}}}
	for _, c := range []consumertest.Consumer{closed, declared} {
		res, err := consumertest.Replay(c, s, consumertest.SQLite("_txlock=immediate&_pragma=busy_timeout(5000)"))
		if err != nil {
			t.Fatal(err)
		}
		trace := res.Outcome.Trace.String()
		if res.Failed {
			t.Fatalf("%s is flagged:\n%s", c.Name, res.Report())
		}
		for _, want := range []string{
			"w1.bg1 exec DELETE FROM idempotency_keys",
			"w1.bg1 waits for a lock at exec DELETE FROM idempotency_keys",
			"w2.bg1 ends with w2 at exec DELETE FROM idempotency_keys",
			"w1.bg1 gets the lock at exec DELETE FROM idempotency_keys",
		} {
			if !strings.Contains(trace, want) {
				t.Errorf("%s: the trace lacks %q:\n%s", c.Name, want, trace)
			}
		}
	}
}

// TestTheSweeperIsVerified: the sweeps interleaved with every schedule of
// an event and its duplicate, time moving by the sweep period once.
func TestTheSweeperIsVerified(t *testing.T) {
	for name, b := range map[string]consumertest.Bounds{
		"one worker, a crash": {Events: one, Workers: 1, Crashes: 1, Duplicates: 1, Advances: 1, Durations: aMinute},
		"two workers":         {Events: one, Workers: 2, Preemptions: 1, Duplicates: 1, Advances: 1, Durations: aMinute},
	} {
		t.Run(name, func(t *testing.T) { consumertest.Verify(t, closed, b, consumertest.CorpusDir(t.TempDir())) })
	}
	t.Run("never closed", func(t *testing.T) {
		consumertest.Verify(t, declared, consumertest.Bounds{Events: one, Workers: 1, Crashes: 1, Duplicates: 1, Advances: 1, Durations: aMinute},
			consumertest.CorpusDir(t.TempDir()))
	})
}

// TestAnUndeclaredSweeperIsReported: the goroutine left running by the
// store nobody closes breaks law runs at the first scenario, with its
// stack, as started by the Worker factory.
func TestAnUndeclaredSweeperIsReported(t *testing.T) {
	res, err := consumertest.Hunt(undeclared, consumertest.Seed(1), consumertest.CorpusDir(t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	report := res.Report()
	if !res.Failed || res.Law != laws.Runs || res.Checks != 1 {
		t.Fatalf("want law runs broken by the first scenario, got:\n%s", report)
	}
	for _, want := range []string{
		"still running after the scenario ended",
		"started by the Worker factory of w1",
		"idemkeys.(*Store).sweepLoop",
		"Consumer.Lingering",
	} {
		if !strings.Contains(report, want) {
			t.Errorf("the report lacks %q:\n%s", want, report)
		}
	}
}

// TestVerifyReportsAnUndeclaredSweeper: Verify too, at its first schedule.
func TestVerifyReportsAnUndeclaredSweeper(t *testing.T) {
	res, err := consumertest.Explore(undeclared, consumertest.Bounds{Events: one, Workers: 1}, consumertest.CorpusDir(t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	if !res.Failed || res.Law != laws.Runs || !strings.Contains(res.Report(), "started by the Worker factory of w1") {
		t.Fatalf("want law runs, the goroutine started by the Worker factory, got:\n%s", res.Report())
	}
}

func FuzzSweeper(f *testing.F) { consumertest.Fuzz(f, closed) }

func FuzzSweeperNeverClosed(f *testing.F) { consumertest.Fuzz(f, declared) }
