package logdeadletters_test

import (
	"slices"
	"testing"

	"github.com/idemcheck/idemcheck/consumertest"
	"github.com/idemcheck/idemcheck/consumertest/handler"
	"github.com/idemcheck/idemcheck/consumertest/laws"
	"github.com/idemcheck/idemcheck/consumertest/scenario"
	"github.com/idemcheck/idemcheck/examples/consumers/logdeadletters"
)

func consumer(name string, lc handler.LogConsumer) consumertest.Consumer {
	return consumertest.Consumer{
		Name:        name,
		Schema:      logdeadletters.Schema,
		Log:         &lc,
		Effects:     consumertest.PerEvent(logdeadletters.Effects),
		Dedupe:      "SELECT event_id FROM processed_events",
		DeadLetters: logdeadletters.DeadLetters,
	}
}

var (
	retrying = consumer("logdeadletters", logdeadletters.Consumer)
	noRetry  = consumer("logdeadletters-noretry", logdeadletters.ConsumerNoRetry)
)

// teamSQLite are the SQLite settings the team runs the consumer with:
// BEGIN IMMEDIATE and a busy timeout. With SQLite's defaults two workers'
// transactions meet SQLITE_BUSY at once, a failure of the consumer's own
// that the harness did not cause: three of them in a row would park a
// healthy record, and healthy-applied would rightly flag it.
var teamSQLite = consumertest.SQLite("_txlock=immediate&_pragma=busy_timeout(5000)")

// failedFetches is one record on one partition whose first n fetches
// fail at their first call (an injected failure, as a lost connection),
// time moving past the backoff after each.
func failedFetches(n int) *scenario.Scenario {
	s := &scenario.Scenario{Version: scenario.Version, Workers: 1, Partitions: 1, Policy: scenario.DefaultPolicy,
		Events: []scenario.Event{{ID: "e1", User: "u1", Amount: 100}},
		// The worker is assigned the partition: Assigned is called, then
		// returns.
		Steps: []scenario.Step{{Op: scenario.OpRun, Worker: 1}, {Op: scenario.OpRun, Worker: 1}}}
	for range n {
		s.Steps = append(s.Steps,
			scenario.Step{Op: scenario.OpRun, Worker: 1},  // fetch: the worker parks at its first call
			scenario.Step{Op: scenario.OpFail, Worker: 1}, // the call fails
			scenario.Step{Op: scenario.OpRun, Worker: 1},  // Handle's answer settles
			scenario.Step{Op: scenario.OpAdvance, Ms: scenario.DefaultPolicy.BackoffMs})
	}
	return s
}

// A record whose three fetches the harness failed is parked and committed
// past: the harness's faults spent its attempts (the policy's four, less
// the one that would have succeeded), so healthy-applied excuses it.
func TestParkedAfterThreeInjectedFailuresIsExcused(t *testing.T) {
	res, err := consumertest.Replay(retrying, failedFetches(3), teamSQLite)
	if err != nil {
		t.Fatal(err)
	}
	if res.Failed {
		t.Fatalf("a record parked after three injected failures was flagged:\n%s", res.Report())
	}
	if !slices.Contains(res.Outcome.Quiet.DeadLetters, "e1") || len(res.Outcome.Quiet.Rows) != 0 {
		t.Fatalf("want e1 parked in dead_letters and not applied, got dead letters %v, effects %v:\n%s",
			res.Outcome.Quiet.DeadLetters, res.Outcome.Quiet.Rows, res.Outcome.Trace)
	}
}

// Two injected failures are not enough to park the record: the third
// fetch applies it.
func TestTwoFailuresThenApplied(t *testing.T) {
	res, err := consumertest.Replay(retrying, failedFetches(2), teamSQLite)
	if err != nil {
		t.Fatal(err)
	}
	if res.Failed || len(res.Outcome.Quiet.DeadLetters) != 0 || len(res.Outcome.Quiet.Rows) != 1 {
		t.Fatalf("want e1 applied once and nothing parked, got dead letters %v, effects %v:\n%s",
			res.Outcome.Quiet.DeadLetters, res.Outcome.Quiet.Rows, res.Report())
	}
}

// Parked at its first failure, the record is flagged: one transient
// failure did not spend its attempts.
func TestParkedAfterOneFailureIsFlagged(t *testing.T) {
	res, err := consumertest.Replay(noRetry, failedFetches(1), teamSQLite)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Failed || res.Law != laws.HealthyApplied {
		t.Fatalf("want healthy-applied broken by a record parked after one failure, got:\n%s", res.Report())
	}
}

func TestCheck(t *testing.T) {
	consumertest.Check(t, retrying, consumertest.Checks(200), teamSQLite)
}

// Hunt (seed 1) finds a healthy record parked after a single fault of the
// harness's (a lock timeout it forced, at seed 1).
func TestNoRetryIsCaught(t *testing.T) {
	res, err := consumertest.Hunt(noRetry, consumertest.Checks(1000), consumertest.Seed(1), consumertest.CorpusDir(t.TempDir()), teamSQLite)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Failed || res.Law != laws.HealthyApplied || res.Scenario.Size() > 10 {
		t.Fatalf("want healthy-applied broken by a scenario of at most 10 steps, got:\n%s", res.Report())
	}
	t.Logf("found after %d scenario(s):\n%s", res.Checks, res.Report())
}
