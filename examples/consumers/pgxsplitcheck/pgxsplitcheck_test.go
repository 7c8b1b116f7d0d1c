package pgxsplitcheck_test

import (
	"os"
	"testing"

	"github.com/idemcheck/idemcheck/consumertest"
	"github.com/idemcheck/idemcheck/consumertest/laws"
	"github.com/idemcheck/idemcheck/consumertest/scenario"
	"github.com/idemcheck/idemcheck/examples/consumers/pgxsplitcheck"
)

func TestPgxSplitCheckCreditsTwice(t *testing.T) {
	dsn := os.Getenv("IDEMCHECK_POSTGRES_DSN")
	if dsn == "" {
		t.Skip("IDEMCHECK_POSTGRES_DSN is not set: a pgx consumer runs on PostgreSQL only")
	}
	res, err := consumertest.Hunt(consumertest.Consumer{
		Name:       "pgxsplitcheck",
		Schema:     pgxsplitcheck.Schema,
		PgxHandler: pgxsplitcheck.Handle,
		Effects:    consumertest.PerEvent("SELECT event_id, amount_cents FROM ledger"),
		Dedupe:     "SELECT event_id FROM processed_events",
	}, consumertest.Postgres(dsn), consumertest.Checks(1000), consumertest.Seed(1))
	if err != nil {
		t.Fatal(err)
	}
	if !res.Failed || res.Law != laws.SingleCredit || res.Scenario.Size() > 8 {
		t.Fatalf("want single-credit broken by a scenario of at most 8 steps, got:\n%s", res.Report())
	}
	t.Log(res.Report())
}

// TestVerifyFindsPgxSplitCheck: the model checker finds the two workers
// that both pass the check, through pgx, in the fewest steps.
func TestVerifyFindsPgxSplitCheck(t *testing.T) {
	dsn := os.Getenv("IDEMCHECK_POSTGRES_DSN")
	if dsn == "" {
		t.Skip("IDEMCHECK_POSTGRES_DSN is not set: a pgx consumer runs on PostgreSQL only")
	}
	c := consumertest.Consumer{
		Name:       "pgxsplitcheck",
		Schema:     pgxsplitcheck.Schema,
		PgxHandler: pgxsplitcheck.Handle,
		Effects:    consumertest.PerEvent("SELECT event_id, amount_cents FROM ledger"),
		Dedupe:     "SELECT event_id FROM processed_events",
	}
	b := consumertest.Bounds{Events: []scenario.Fate{scenario.FateOK}, Workers: 2, Preemptions: 1, Duplicates: 1}
	res, err := consumertest.Explore(c, b, consumertest.Postgres(dsn), consumertest.CorpusDir(t.TempDir()))
	if err != nil || !res.Failed || res.Law != laws.SingleCredit {
		t.Fatalf("want single-credit broken, got %v:\n%s", err, res.Report())
	}
	t.Logf("%s in %d step(s), %d schedules\n%s", res.Law, res.Scenario.Size(), res.Schedules, res.Report())
}
