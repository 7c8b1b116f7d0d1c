package secondconn_test

import (
	"os"
	"testing"

	"github.com/idemcheck/idemcheck/consumertest"
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

// TestOnSQLite is skipped: the harness's SQLite is an in-memory database
// (memdb), whose readers wait for a writer, unlike the file the team
// runs (SQLiteParams): the library's read on its second connection meets
// the lock of its own transaction, gives up with SQLITE_BUSY at every
// attempt, and Hunt (seed 1) reports healthy-applied at its first
// scenario. Once the harness plays SQLite in a file with the team's
// settings (consumertest.SQLite(secondconn.SQLiteParams)), this test
// must pass.
func TestOnSQLite(t *testing.T) {
	t.Skip("flagged on the harness's in-memory SQLite, whose readers wait for the writer, unlike the team's SQLite file (WAL): to run with consumertest.SQLite(secondconn.SQLiteParams) once the backend is a real file")
	consumertest.Check(t, consumer, consumertest.Checks(300))
}

func TestOnPostgres(t *testing.T) {
	consumertest.Check(t, consumer, consumertest.Checks(100), consumertest.Postgres(pgDSN(t)))
}

// TestOnPostgresIsVerified: one event, a crash, an injected failure and a
// duplicate anywhere; two workers with a preemption and a duplicate.
func TestOnPostgresIsVerified(t *testing.T) {
	one := []consumertest.Fate{consumertest.FateOK}
	for name, b := range map[string]consumertest.Bounds{
		"one worker":  {Events: one, Workers: 1, Crashes: 1, Failures: 1, Duplicates: 1},
		"two workers": {Events: one, Workers: 2, Preemptions: 1, Duplicates: 1},
	} {
		t.Run(name, func(t *testing.T) {
			consumertest.Verify(t, consumer, b, consumertest.Postgres(pgDSN(t)), consumertest.CorpusDir(t.TempDir()))
		})
	}
}

// FuzzSecondConn fuzzes the consumer on PostgreSQL (see TestOnSQLite).
func FuzzSecondConn(f *testing.F) {
	consumertest.Fuzz(f, consumer, consumertest.Postgres(pgDSN(f)))
}
