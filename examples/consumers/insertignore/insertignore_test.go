package insertignore_test

import (
	"os"
	"testing"

	"github.com/idemcheck/idemcheck/consumertest"
	"github.com/idemcheck/idemcheck/consumertest/laws"
	"github.com/idemcheck/idemcheck/consumertest/scenario"
	"github.com/idemcheck/idemcheck/examples/consumers/insertignore"
	"github.com/idemcheck/idemcheck/impl/contract/handler"
)

// mysqlDSN is the MySQL or MariaDB server at IDEMCHECK_MYSQL_DSN, or
// skips: INSERT IGNORE is MySQL's.
func mysqlDSN(tb testing.TB) string {
	tb.Helper()
	dsn := os.Getenv("IDEMCHECK_MYSQL_DSN")
	if dsn == "" {
		tb.Skip("IDEMCHECK_MYSQL_DSN is not set: skipping the INSERT IGNORE consumers, which run on MySQL only")
	}
	return dsn
}

func consumer(name string, h handler.Func) consumertest.Consumer {
	return consumertest.Consumer{
		Name:    name,
		Schema:  insertignore.Schema,
		Handler: h,
		Effects: consumertest.PerEvent("SELECT event_id, amount_cents FROM ledger"),
		Dedupe:  "SELECT event_id FROM processed_events",
	}
}

func TestInsertIgnoreWithRowsAffectedCheckedIsNeverFlagged(t *testing.T) {
	dsn := mysqlDSN(t)
	consumertest.Check(t, consumer("insertignore", insertignore.Handle), consumertest.Checks(150), consumertest.MySQL(dsn))
}

func TestInsertIgnoreUncheckedCreditsARedeliveryAgain(t *testing.T) {
	dsn := mysqlDSN(t)
	res, err := consumertest.Hunt(consumer("insertignore-unchecked", insertignore.HandleUnchecked),
		consumertest.Checks(1000), consumertest.Seed(1), consumertest.MySQL(dsn))
	if err != nil {
		t.Fatal(err)
	}
	if !res.Failed || res.Law != laws.SingleCredit || res.Scenario.Size() > 8 {
		t.Fatalf("want %s broken by a scenario of at most 8 steps, got:\n%s", laws.SingleCredit, res.Report())
	}
	if res.Outcome.Backend != "mysql" {
		t.Fatalf("the counterexample ran on %q", res.Outcome.Backend)
	}
	t.Logf("found after %d scenario(s):\n%s", res.Checks, res.Report())
}

// TestVerifyFindsInsertIgnoreUncheckedOnMySQL: the model checker finds
// the unchecked consumer's double credit on the server, with a
// counterexample that replays there.
func TestVerifyFindsInsertIgnoreUncheckedOnMySQL(t *testing.T) {
	dsn := mysqlDSN(t)
	b := consumertest.Bounds{Events: []scenario.Fate{scenario.FateOK}, Workers: 2, Preemptions: 1, Duplicates: 1}
	res, err := consumertest.Explore(consumer("insertignore-unchecked", insertignore.HandleUnchecked), b,
		consumertest.MySQL(dsn), consumertest.CorpusDir(t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	if !res.Failed || res.Law != laws.SingleCredit || res.Scenario == nil || res.Outcome.Backend != "mysql" {
		t.Fatalf("want %s broken on mysql with a counterexample, got:\n%s", laws.SingleCredit, res.Report())
	}
	t.Logf("%d schedules, %d states:\n%s", res.Schedules, res.States, res.Report())
}

// TestVerifyProvesInsertIgnoreWithRowsAffectedCheckedOnMySQL: the model
// checker explores every schedule of two events on two workers with a
// preemption and a duplicate on the server, and finds none in
// which the consumer that reads RowsAffected breaks a law.
func TestVerifyProvesInsertIgnoreWithRowsAffectedCheckedOnMySQL(t *testing.T) {
	dsn := mysqlDSN(t)
	b := consumertest.Bounds{Events: []scenario.Fate{scenario.FateOK, scenario.FateOK}, Workers: 2, Preemptions: 1, Duplicates: 1}
	res, err := consumertest.Explore(consumer("insertignore", insertignore.Handle), b,
		consumertest.MySQL(dsn), consumertest.CorpusDir(t.TempDir()))
	if err != nil || !res.Verified || res.Backend != "mysql" || res.Cut > 0 {
		t.Fatalf("want verified on mysql with no schedule cut (%v):\n%s", err, res.Report())
	}
	t.Logf("%d schedules, %d states, %s", res.Schedules, res.States, res.Elapsed)
}
