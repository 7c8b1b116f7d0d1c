package catalog_test

import (
	"os"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/consumertest"
	"github.com/idemcheck/idemcheck/examples/consumers/catalog"
)

// postgresDSN returns the PostgreSQL DSN, or skips.
func postgresDSN(tb testing.TB) string {
	tb.Helper()
	dsn := os.Getenv(consumertest.PostgresEnv)
	if dsn == "" {
		tb.Skipf("%s is not set: skipping the example consumers on PostgreSQL", consumertest.PostgresEnv)
	}
	return dsn
}

// TestOnPostgres runs the example consumers on PostgreSQL, unchanged (or
// as written for it, Entry.On): the correct ones are never flagged (a
// small budget here; the benchmark and fuzzrun consumer NAME -db postgres run more), and
// broken ones are caught by their law with a counterexample of at most 8
// steps.
func TestOnPostgres(t *testing.T) {
	dsn := postgresDSN(t)
	for _, name := range []string{"adr", "insertfirst", "balance", "splitcheck", "effectthenmark", "balancesplit", "lease", "ttl",
		"deadline", "deadline-cancel", "upsertfirst", "tablefirstuse", "tablefirstuse-lazy", "sweeper", "sweeper-lingering", "secondconn",
		"migrations", "ownmessage", "ownretry", "deadline-split", "payloadhash", "ownretry-noretry"} {
		e, ok := catalog.Lookup(name)
		if !ok {
			t.Fatalf("no example %q", name)
		}
		t.Run(name, func(t *testing.T) {
			if e.Correct() {
				consumertest.Check(t, e.On("postgres"), consumertest.Checks(40), consumertest.Postgres(dsn))
				return
			}
			res, err := consumertest.Hunt(e.On("postgres"), consumertest.Checks(1000), consumertest.Seed(1),
				consumertest.ShrinkTime(time.Second), consumertest.Postgres(dsn))
			if err != nil {
				t.Fatal(err)
			}
			if !res.Failed || res.Law != e.Law || res.Scenario.Size() > 8 {
				t.Fatalf("want %s broken by a scenario of at most 8 steps, got:\n%s", e.Law, res.Report())
			}
			if res.Outcome.Backend != "postgres" {
				t.Fatalf("the counterexample ran on %q", res.Outcome.Backend)
			}
			t.Logf("found after %d scenario(s) in %s, %d step(s):\n%s", res.Checks, res.FoundAfter.Round(1e6), res.Scenario.Size(), res.Report())
		})
	}
}

// BenchmarkADRScenariosPostgres is BenchmarkADRScenarios on PostgreSQL at
// IDEMCHECK_POSTGRES_DSN: drawn scenarios played and judged one after
// another, the state reset between them.
func BenchmarkADRScenariosPostgres(b *testing.B) {
	dsn := postgresDSN(b)
	e, _ := catalog.Lookup("adr")
	res, err := consumertest.Hunt(e.Consumer, consumertest.Checks(b.N), consumertest.Seed(1), consumertest.NoReduce(), consumertest.Postgres(dsn))
	if err != nil {
		b.Fatal(err)
	}
	if res.Failed {
		b.Fatalf("the ADR consumer was flagged:\n%s", res.Report())
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "scenarios/s")
}
