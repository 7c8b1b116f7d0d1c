package ownretry_test

import (
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/idemcheck/idemcheck/consumertest"
	"github.com/idemcheck/idemcheck/consumertest/laws"
	"github.com/idemcheck/idemcheck/consumertest/scenario"
	"github.com/idemcheck/idemcheck/examples/consumers/ownretry"
	"github.com/idemcheck/idemcheck/impl/contract/handler"
)

func consumer(name string, h handler.Func) consumertest.Consumer {
	return consumertest.Consumer{
		Name:        name,
		Schema:      ownretry.Schema,
		Handler:     h,
		Effects:     consumertest.PerEvent("SELECT event_id, amount_cents FROM ledger"),
		Dedupe:      "SELECT event_id FROM processed_events",
		DeadLetters: "SELECT event_id FROM dead_letters",
	}
}

var (
	retrying = consumer("ownretry", ownretry.Handle)
	noRetry  = consumer("ownretry-noretry", ownretry.HandleNoRetry)
)

// teamSQLite are the SQLite settings the team runs the consumer with:
// BEGIN IMMEDIATE and a busy timeout. (SQLite's defaults crash the
// harness today: see TestOnSQLiteDefaults.)
var teamSQLite = consumertest.SQLite("_txlock=immediate&_pragma=busy_timeout(5000)")

// fourAttempts is the broker's policy of Check, under Verify: the
// consumer dead-letters at its third failure, before the broker would.
var fourAttempts = func() scenario.Policy {
	p := scenario.VerifyPolicy
	p.MaxAttempts = 4
	return p
}()

func TestOwnRetryIsNeverFlagged(t *testing.T) {
	consumertest.Check(t, retrying, consumertest.Checks(300), teamSQLite)
}

// TestOnSQLiteDefaults is skipped: with SQLite's defaults (deferred BEGIN,
// no busy timeout) the harness kills the test binary: "fatal error:
// fault", a SIGSEGV in sqlite3_finalize under (*wrappedRows).Close, at
// countFailure's INSERT ... RETURNING read with QueryRow (Hunt, seed 1,
// at its second scenario). The wrapping driver retries the driver's
// rows.Close when it answers busy, and the statement was finalized by the
// first Close already.
func TestOnSQLiteDefaults(t *testing.T) {
	consumertest.Check(t, retrying, consumertest.Checks(300))
}

func TestOwnRetryIsNeverFlaggedOnPostgres(t *testing.T) {
	dsn := os.Getenv(consumertest.PostgresEnv)
	if dsn == "" {
		t.Skipf("%s is not set: skipping the consumer on PostgreSQL", consumertest.PostgresEnv)
	}
	consumertest.Check(t, retrying, consumertest.Checks(60), consumertest.Postgres(dsn))
}

func TestOwnRetryIsVerified(t *testing.T) {
	for name, b := range map[string]consumertest.Bounds{
		"an event failing three times, and a poison one": {Events: []scenario.Fate{scenario.Transient(3), scenario.FatePoison}, Workers: 1, Policy: fourAttempts},
		"an event failing three times, two workers":      {Events: []scenario.Fate{scenario.Transient(3)}, Workers: 2, Preemptions: 1, Crashes: 1, Duplicates: 1, Policy: fourAttempts},
		"an event, two workers, every fault":             {Events: []scenario.Fate{scenario.FateOK}, Workers: 2, Preemptions: 1, Crashes: 1, Failures: 1, Duplicates: 1},
	} {
		t.Run(name, func(t *testing.T) {
			consumertest.Verify(t, retrying, b, consumertest.CorpusDir(t.TempDir()), teamSQLite)
		})
	}
}

// TestTheOwnDeadLettersCount: without Consumer.DeadLetters, an event the
// consumer parked in its own table is lost to the harness (nothing-lost);
// with it, it is dead-lettered.
func TestTheOwnDeadLettersCount(t *testing.T) {
	b := consumertest.Bounds{Events: []scenario.Fate{scenario.Transient(3)}, Workers: 1, Policy: fourAttempts}
	undeclared := retrying
	undeclared.DeadLetters = ""
	res, err := consumertest.Explore(undeclared, b, consumertest.CorpusDir(t.TempDir()), teamSQLite)
	if err != nil || !res.Failed || res.Law != laws.NothingLost || !strings.Contains(res.Outcome.Trace.String(), "INSERT INTO dead_letters") {
		t.Fatalf("undeclared, want nothing-lost broken by the event parked in dead_letters (%v):\n%s", err, res.Report())
	}
	res, err = consumertest.Explore(retrying, b, consumertest.CorpusDir(t.TempDir()), teamSQLite)
	if err != nil || !res.Verified {
		t.Fatalf("declared, want verified (%v):\n%s", err, res.Report())
	}
}

// TestNoRetryIsCaught: Hunt (seed 1) finds a healthy event parked after a
// single injected failure.
func TestNoRetryIsCaught(t *testing.T) {
	res, err := consumertest.Hunt(noRetry, consumertest.Checks(1000), consumertest.Seed(1), consumertest.CorpusDir(t.TempDir()), teamSQLite)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Failed || res.Law != laws.HealthyApplied || res.Scenario.Size() > 8 {
		t.Fatalf("want healthy-applied broken by a scenario of at most 8 steps, got:\n%s", res.Report())
	}
	t.Logf("found after %d scenario(s):\n%s", res.Checks, res.Report())
}

// TestVerifyCatchesNoRetry: one event, one worker, one injected failure,
// the broker retrying four times. (Under VerifyPolicy's two attempts, one
// failed delivery is all the broker would have retried: parking the
// event after it breaks nothing.)
func TestVerifyCatchesNoRetry(t *testing.T) {
	res, err := consumertest.Explore(noRetry, consumertest.Bounds{Events: []scenario.Fate{scenario.FateOK}, Workers: 1, Failures: 1, Policy: fourAttempts},
		consumertest.CorpusDir(t.TempDir()), teamSQLite)
	if err != nil || !res.Failed || res.Law != laws.HealthyApplied || res.Scenario.Size() > 2 {
		t.Fatalf("want healthy-applied broken in at most 2 steps (%v):\n%s", err, res.Report())
	}
}

// failOnce is one more seed input: an event whose first delivery fails at
// its first call, under the default policy (four attempts).
func failOnce(f *testing.F) {
	f.Helper()
	in, err := scenario.FuzzInput(&scenario.Scenario{Version: scenario.Version, Workers: 1, Policy: scenario.DefaultPolicy,
		Events: []scenario.Event{{ID: "e1", User: "u1", Amount: 100}},
		Steps:  []scenario.Step{{Op: scenario.OpRun, Worker: 1}, {Op: scenario.OpFail, Worker: 1}}})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(in)
}

func FuzzOwnRetry(f *testing.F) {
	failOnce(f)
	consumertest.Fuzz(f, retrying, teamSQLite)
}

// fuzzEnv switches FuzzOwnRetryNoRetry on: the consumer is broken, so a
// plain go test must not fail on it; TestFuzzCatchesNoRetry runs it.
const fuzzEnv = "IDEMCHECK_FUZZ_BROKEN"

func FuzzOwnRetryNoRetry(f *testing.F) {
	if os.Getenv(fuzzEnv) != "1" {
		f.Skipf("a broken consumer: set %s=1 to fuzz it", fuzzEnv)
	}
	failOnce(f)
	consumertest.Fuzz(f, noRetry, consumertest.CorpusDir(f.TempDir()), teamSQLite)
}

// TestFuzzCatchesNoRetry runs FuzzOwnRetryNoRetry's seed inputs in a child
// process: the failure under four attempts must fail with healthy-applied.
func TestFuzzCatchesNoRetry(t *testing.T) {
	if os.Getenv(fuzzEnv) == "1" {
		t.Skip("running inside the child")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^FuzzOwnRetryNoRetry$")
	cmd.Env = append(os.Environ(), fuzzEnv+"=1")
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 || !strings.Contains(string(out), `consumer "ownretry-noretry" breaks healthy-applied`) {
		t.Fatalf("the seed inputs did not fail with healthy-applied (%v):\n%s", err, out)
	}
}
