package secondconn_test

import (
	"os"
	"testing"

	"github.com/idemcheck/idemcheck/consumertest"
	"github.com/idemcheck/idemcheck/consumertest/scenario"
	"github.com/idemcheck/idemcheck/examples/consumers/secondconn"
)

var consumer = consumertest.Consumer{
	Name:    "secondconn",
	Schema:  secondconn.Schema,
	Worker:  secondconn.NewWorker,
	Effects: consumertest.PerEvent("SELECT idem_key, amount_cents, currency FROM postings"),
}

func pgDSN(tb testing.TB) string {
	tb.Helper()
	dsn := os.Getenv(consumertest.PostgresEnv)
	if dsn == "" {
		tb.Skipf("%s is not set: skipping the second-connection consumer on PostgreSQL", consumertest.PostgresEnv)
	}
	return dsn
}

// TestOnSQLite runs SQLite as the team does (SQLiteParams: WAL, a busy
// timeout, BEGIN IMMEDIATE): the library's read on its second connection
// gets in beside its own transaction's write lock.
func TestOnSQLite(t *testing.T) {
	consumertest.Check(t, consumer, consumertest.Checks(300), consumertest.SQLite(secondconn.SQLiteParams))
}

// TestOnSQLiteIsVerified: one event, two workers, a preemption, a crash and
// a duplicate.
func TestOnSQLiteIsVerified(t *testing.T) {
	consumertest.Verify(t, consumer, consumertest.Bounds{
		Events: []scenario.Fate{scenario.FateOK}, Workers: 2, Preemptions: 1, Crashes: 1, Duplicates: 1,
	}, consumertest.SQLite(secondconn.SQLiteParams), consumertest.CorpusDir(t.TempDir()))
}

func TestOnPostgres(t *testing.T) {
	consumertest.Check(t, consumer, consumertest.Checks(100), consumertest.Postgres(pgDSN(t)))
}

// TestOnPostgresIsVerified: one event, a crash, an injected failure and a
// duplicate anywhere; two workers with a preemption and a duplicate.
func TestOnPostgresIsVerified(t *testing.T) {
	one := []scenario.Fate{scenario.FateOK}
	for name, b := range map[string]consumertest.Bounds{
		"one worker":  {Events: one, Workers: 1, Crashes: 1, Failures: 1, Duplicates: 1},
		"two workers": {Events: one, Workers: 2, Preemptions: 1, Duplicates: 1},
	} {
		t.Run(name, func(t *testing.T) {
			consumertest.Verify(t, consumer, b, consumertest.Postgres(pgDSN(t)), consumertest.CorpusDir(t.TempDir()))
		})
	}
}

// FuzzSecondConn fuzzes the consumer on SQLite, as the team runs it.
func FuzzSecondConn(f *testing.F) {
	consumertest.Fuzz(f, consumer, consumertest.SQLite(secondconn.SQLiteParams))
}
