package pgxcheckintx_test

import (
	"os"
	"testing"

	"github.com/idemcheck/idemcheck/consumertest"
	"github.com/idemcheck/idemcheck/consumertest/laws"
	"github.com/idemcheck/idemcheck/consumertest/scenario"
	"github.com/idemcheck/idemcheck/examples/consumers/pgxcheckintx"
)

func consumer() consumertest.Consumer {
	return consumertest.Consumer{
		Name:       "pgxcheckintx",
		Schema:     pgxcheckintx.Schema,
		PgxHandler: pgxcheckintx.Handle,
		Effects:    consumertest.PerEvent("SELECT event_id, amount_cents FROM ledger"),
		Dedupe:     "SELECT event_id FROM processed_events",
	}
}

func dsn(tb testing.TB) string {
	d := os.Getenv("IDEMCHECK_POSTGRES_DSN")
	if d == "" {
		tb.Skip("IDEMCHECK_POSTGRES_DSN is not set: a pgx consumer runs on PostgreSQL only")
	}
	return d
}

// TestPgxCheckInTxCreditsTwice: the hunt finds two transactions that both
// pass the check, the second mark waiting for the first's row.
func TestPgxCheckInTxCreditsTwice(t *testing.T) {
	res, err := consumertest.Hunt(consumer(), consumertest.Postgres(dsn(t)), consumertest.Checks(1000), consumertest.Seed(1))
	if err != nil {
		t.Fatal(err)
	}
	if !res.Failed || res.Law != laws.SingleCredit {
		t.Fatalf("want single-credit broken, got:\n%s", res.Report())
	}
	t.Log(res.Report())
}

// TestVerifyFindsPgxCheckInTx: the model checker finds it too, in the
// fewest steps, and the counterexample replays with the same trace.
func TestVerifyFindsPgxCheckInTx(t *testing.T) {
	d := dsn(t)
	b := consumertest.Bounds{Events: []scenario.Fate{scenario.FateOK}, Workers: 2, Preemptions: 1, Duplicates: 1}
	res, err := consumertest.Explore(consumer(), b, consumertest.Postgres(d), consumertest.CorpusDir(t.TempDir()))
	if err != nil || !res.Failed || res.Law != laws.SingleCredit {
		t.Fatalf("want single-credit broken, got %v:\n%s", err, res.Report())
	}
	again, err := consumertest.Replay(consumer(), res.Scenario, consumertest.Postgres(d))
	if err != nil || !again.Failed || again.Outcome.Trace.String() != res.Outcome.Trace.String() {
		t.Fatalf("the counterexample does not replay with the same trace (%v):\n%s", err, again.Report())
	}
	t.Logf("%s in %d step(s), %d schedules\n%s", res.Law, res.Scenario.Size(), res.Schedules, res.Report())
}
