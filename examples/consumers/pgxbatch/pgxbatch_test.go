package pgxbatch_test

import (
	"os"
	"testing"

	"github.com/idemcheck/idemcheck/consumertest"
	"github.com/idemcheck/idemcheck/examples/consumers/pgxbatch"
)

func TestPgxBatchConsumerIsNeverFlagged(t *testing.T) {
	dsn := os.Getenv("IDEMCHECK_POSTGRES_DSN")
	if dsn == "" {
		t.Skip("IDEMCHECK_POSTGRES_DSN is not set: a pgx consumer runs on PostgreSQL only")
	}
	consumertest.Check(t, consumertest.Consumer{
		Name:       "pgxbatch",
		Schema:     pgxbatch.Schema,
		PgxHandler: pgxbatch.Handle,
		Effects:    consumertest.PerEvent("SELECT event_id, amount_cents FROM ledger"),
		Dedupe:     "SELECT event_id FROM processed_events",
	}, consumertest.Postgres(dsn), consumertest.Checks(300))
}
