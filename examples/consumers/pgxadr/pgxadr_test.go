package pgxadr_test

import (
	"os"
	"testing"

	"github.com/idemcheck/idemcheck/consumertest"
	"github.com/idemcheck/idemcheck/consumertest/scenario"
	"github.com/idemcheck/idemcheck/examples/consumers/pgxadr"
)

// consumer is the pgx ADR consumer under the harness.
func consumer() consumertest.Consumer {
	return consumertest.Consumer{
		Name:       "pgxadr",
		Schema:     pgxadr.Schema,
		PgxHandler: pgxadr.Handle,
		Effects:    consumertest.PerEvent("SELECT event_id, amount_cents FROM ledger"),
		Dedupe:     "SELECT event_id FROM processed_events",
	}
}

// dsn is the PostgreSQL the consumer runs on: IDEMCHECK_POSTGRES_DSN, or
// the test skips.
func dsn(tb testing.TB) string {
	d := os.Getenv("IDEMCHECK_POSTGRES_DSN")
	if d == "" {
		tb.Skip("IDEMCHECK_POSTGRES_DSN is not set: a pgx consumer runs on PostgreSQL only")
	}
	return d
}

func TestPgxADRConsumerIsNeverFlagged(t *testing.T) {
	consumertest.Check(t, consumer(), consumertest.Postgres(dsn(t)), consumertest.Checks(300))
}

func TestPgxADRConsumerNeedsPostgres(t *testing.T) {
	_, err := consumertest.Hunt(consumer(), consumertest.Checks(1))
	if err == nil {
		t.Fatal("a PgxHandler on SQLite: want a bad input error, got none")
	}
	t.Log(err)
}

// BenchmarkPgxADRScenarios measures how many drawn scenarios of the pgx
// ADR consumer the harness plays and judges per second (scenarios/s).
func BenchmarkPgxADRScenarios(b *testing.B) {
	d := dsn(b)
	n := 0
	for b.Loop() {
		res, err := consumertest.Hunt(consumer(), consumertest.Postgres(d), consumertest.Checks(200), consumertest.Seed(uint64(n+1)))
		if err != nil {
			b.Fatal(err)
		}
		if res.Failed {
			b.Fatalf("the pgx ADR consumer flagged:\n%s", res.Report())
		}
		n += res.Checks
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "scenarios/s")
}

// TestPgxADRConsumerIsVerified: the model checker explores every schedule
// of one event and its duplicate on two workers, with a preemption, a
// crash and an injected failure, through pgx on PostgreSQL, and finds none
// that breaks a law.
func TestPgxADRConsumerIsVerified(t *testing.T) {
	d := dsn(t)
	b := consumertest.Bounds{Events: []scenario.Fate{scenario.FateOK}, Workers: 2, Preemptions: 1, Duplicates: 1, Crashes: 1, Failures: 1}
	res, err := consumertest.Explore(consumer(), b, consumertest.Postgres(d), consumertest.CorpusDir(t.TempDir()))
	if err != nil || !res.Verified {
		t.Fatalf("%v\n%s", err, res.Report())
	}
	t.Logf("%d schedules, %d states, %s", res.Schedules, res.States, res.Elapsed)
}

// FuzzPgxADR: the pgx ADR consumer under native Go fuzzing (go test -fuzz
// FuzzPgxADR ./examples/consumers/pgxadr); without -fuzz, its seeds.
func FuzzPgxADR(f *testing.F) { consumertest.Fuzz(f, consumer(), consumertest.Postgres(dsn(f))) }
