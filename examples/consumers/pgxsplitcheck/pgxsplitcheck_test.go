package pgxsplitcheck_test

import (
	"os"
	"testing"

	"github.com/idemcheck/idemcheck/consumertest"
	"github.com/idemcheck/idemcheck/consumertest/laws"
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
