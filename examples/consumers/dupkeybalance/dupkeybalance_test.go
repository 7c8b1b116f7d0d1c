package dupkeybalance_test

import (
	"os"
	"testing"

	"github.com/idemcheck/idemcheck/consumertest"
	"github.com/idemcheck/idemcheck/consumertest/laws"
	"github.com/idemcheck/idemcheck/consumertest/scenario"
	"github.com/idemcheck/idemcheck/examples/consumers/dupkeybalance"
)

// mysqlDSN is the MySQL or MariaDB server at IDEMCHECK_MYSQL_DSN, or
// skips: ON DUPLICATE KEY UPDATE is MySQL's.
func mysqlDSN(tb testing.TB) string {
	tb.Helper()
	dsn := os.Getenv("IDEMCHECK_MYSQL_DSN")
	if dsn == "" {
		tb.Skip("IDEMCHECK_MYSQL_DSN is not set: skipping the ON DUPLICATE KEY UPDATE consumer, which runs on MySQL only")
	}
	return dsn
}

var consumer = consumertest.Consumer{
	Name:    "dupkeybalance",
	Schema:  dupkeybalance.Schema,
	Handler: dupkeybalance.Handle,
	Effects: consumertest.Aggregate("SELECT user_id, balance_cents FROM accounts"),
	Dedupe:  "SELECT event_id FROM processed_events",
}

func TestUpsertedBalanceIsCreditedAgainOnARedelivery(t *testing.T) {
	res, err := consumertest.Hunt(consumer, consumertest.Checks(1000), consumertest.Seed(1), consumertest.MySQL(mysqlDSN(t)))
	if err != nil {
		t.Fatal(err)
	}
	if !res.Failed || res.Law != laws.SingleCredit || res.Scenario.Size() > 8 {
		t.Fatalf("want %s broken by a scenario of at most 8 steps, got:\n%s", laws.SingleCredit, res.Report())
	}
	t.Logf("found after %d scenario(s):\n%s", res.Checks, res.Report())
}

// TestVerifyFindsTheUpsertedBalanceOnMySQL: the model checker finds the
// second credit of a duplicate on the server, within one event, two
// workers, a preemption and a duplicate, and its counterexample, and the
// file it saved, replay with the same trace.
func TestVerifyFindsTheUpsertedBalanceOnMySQL(t *testing.T) {
	dsn := mysqlDSN(t)
	b := consumertest.Bounds{Events: []scenario.Fate{scenario.FateOK}, Workers: 2, Preemptions: 1, Duplicates: 1}
	res, err := consumertest.Explore(consumer, b, consumertest.MySQL(dsn), consumertest.CorpusDir(t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	if !res.Failed || res.Law != laws.SingleCredit || res.Scenario == nil || res.Outcome.Backend != "mysql" {
		t.Fatalf("want %s broken on mysql with a counterexample, got:\n%s", laws.SingleCredit, res.Report())
	}
	trace := res.Outcome.Trace.String()
	again, err := consumertest.Replay(consumer, res.Scenario, consumertest.MySQL(dsn))
	if err != nil || again.Law != res.Law || again.Outcome.Trace.String() != trace {
		t.Fatalf("the counterexample does not replay with the same trace (%v):\n%s\nthen:\n%s", err, trace, again.Report())
	}
	saved, err := scenario.Load(res.CorpusFile)
	if err != nil {
		t.Fatal(err)
	}
	again, err = consumertest.Replay(consumer, saved, consumertest.MySQL(dsn))
	if err != nil || again.Outcome.Trace.String() != trace {
		t.Fatalf("the saved counterexample replays differently (%v):\n%s", err, again.Report())
	}
	t.Logf("%d schedules, %d states, %s:\n%s", res.Schedules, res.States, res.Elapsed, res.Report())
}
