package adrmysql_test

import (
	"os"
	"testing"

	"github.com/idemcheck/idemcheck/consumertest"
	"github.com/idemcheck/idemcheck/consumertest/scenario"
	"github.com/idemcheck/idemcheck/examples/consumers/adrmysql"
)

func mysqlDSN(tb testing.TB) string {
	tb.Helper()
	dsn := os.Getenv("IDEMCHECK_MYSQL_DSN")
	if dsn == "" {
		tb.Skip("IDEMCHECK_MYSQL_DSN is not set: skipping the ADR consumer on MySQL")
	}
	return dsn
}

var adr = consumertest.Consumer{
	Name:    "adrmysql",
	Schema:  adrmysql.Schema,
	Handler: adrmysql.Handle,
	Effects: consumertest.PerEvent("SELECT event_id, amount_cents FROM ledger"),
	Dedupe:  "SELECT event_id FROM processed_events",
}

func TestADRConsumerIsNeverFlaggedOnMySQL(t *testing.T) {
	consumertest.Check(t, adr, consumertest.Checks(300), consumertest.MySQL(mysqlDSN(t)))
}

// BenchmarkADRScenariosMySQL: drawn scenarios of the ADR consumer played
// and judged one after another on the server at IDEMCHECK_MYSQL_DSN, the
// state reset between them.
func BenchmarkADRScenariosMySQL(b *testing.B) {
	dsn := mysqlDSN(b)
	res, err := consumertest.Hunt(adr, consumertest.Checks(b.N), consumertest.Seed(1), consumertest.NoReduce(), consumertest.MySQL(dsn))
	if err != nil {
		b.Fatal(err)
	}
	if res.Failed {
		b.Fatalf("the ADR consumer was flagged:\n%s", res.Report())
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "scenarios/s")
}

// TestADRConsumerIsVerifiedOnMySQL: the model checker explores every
// schedule of two events on two workers with a preemption and a
// duplicate on the server, naming each state by the tables' rows and
// AUTO_INCREMENT counters, and finds none that breaks a law.
func TestADRConsumerIsVerifiedOnMySQL(t *testing.T) {
	dsn := mysqlDSN(t)
	b := consumertest.Bounds{Events: []scenario.Fate{scenario.FateOK, scenario.FateOK}, Workers: 2, Preemptions: 1, Duplicates: 1}
	res, err := consumertest.Explore(adr, b, consumertest.MySQL(dsn), consumertest.CorpusDir(t.TempDir()))
	if err != nil || !res.Verified || res.Backend != "mysql" {
		t.Fatalf("%v\n%s", err, res.Report())
	}
	t.Logf("%d schedules, %d states, %s", res.Schedules, res.States, res.Elapsed)
}
