package migrations_test

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"testing"

	_ "modernc.org/sqlite"

	"github.com/idemcheck/idemcheck/consumertest"
	"github.com/idemcheck/idemcheck/consumertest/scenario"
	"github.com/idemcheck/idemcheck/examples/consumers/migrations"
)

func consumer(d migrations.Dialect) consumertest.Consumer {
	return consumertest.Consumer{
		Name:    "migrations",
		Setup:   migrations.Setup(d),
		Handler: migrations.Handle,
		Effects: consumertest.PerEvent("SELECT event_id, amount_cents, currency FROM ledger"),
		Dedupe:  "SELECT event_id FROM processed_events",
	}
}

func pgDSN(t *testing.T) string {
	t.Helper()
	dsn := os.Getenv(consumertest.PostgresEnv)
	if dsn == "" {
		t.Skipf("%s is not set: skipping the migrated consumer on PostgreSQL", consumertest.PostgresEnv)
	}
	return dsn
}

// TestMigrateAppliesEachFileOnce runs the migrations on a SQLite file
// twice: each is applied once, its quoted values arrive as written, and
// the trigger refuses a zero amount.
func TestMigrateAppliesEachFileOnce(t *testing.T) {
	ctx := context.Background()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(t.TempDir(), "m.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for range 2 {
		if err := migrations.Migrate(ctx, db, migrations.SQLite); err != nil {
			t.Fatal(err)
		}
	}
	var n int
	var note string
	if err := db.QueryRow(`SELECT count(*) FROM schema_migrations`).Scan(&n); err != nil || n != 3 {
		t.Fatalf("schema_migrations lists %d migrations (%v), want 3", n, err)
	}
	if err := db.QueryRow(`SELECT value FROM consumer_settings WHERE name = 'ledger.note'`).Scan(&note); err != nil {
		t.Fatal(err)
	}
	if want := "it's credited once; -- not a comment /* nor this */"; note != want {
		t.Errorf("the note is %q, want %q", note, want)
	}
	_, err = db.Exec(`INSERT INTO ledger (event_id, user_id, amount_cents, currency) VALUES ('e1', 'u1', 0, 'EUR')`)
	if err == nil || !strings.Contains(err.Error(), "ledger: amount must be positive; got a zero or less") {
		t.Errorf("the trigger let a zero amount in: %v", err)
	}
}

func TestMigratedConsumerIsNeverFlagged(t *testing.T) {
	consumertest.Check(t, consumer(migrations.SQLite), consumertest.Checks(300))
}

func TestMigratedConsumerIsNeverFlaggedOnPostgres(t *testing.T) {
	consumertest.Check(t, consumer(migrations.Postgres), consumertest.Checks(100), consumertest.Postgres(pgDSN(t)))
}

// TestMigratedConsumerIsVerified: an event and a poison one (which only
// the migrated trigger refuses), with a crash, an injected failure and a
// duplicate.
func TestMigratedConsumerIsVerified(t *testing.T) {
	b := consumertest.Bounds{Events: []scenario.Fate{scenario.FateOK, scenario.FatePoison}, Workers: 1, Crashes: 1, Failures: 1, Duplicates: 1}
	consumertest.Verify(t, consumer(migrations.SQLite), b, consumertest.CorpusDir(t.TempDir()))
}

func TestMigratedConsumerIsVerifiedOnPostgres(t *testing.T) {
	b := consumertest.Bounds{Events: []scenario.Fate{scenario.FateOK, scenario.FatePoison}, Workers: 1, Crashes: 1}
	consumertest.Verify(t, consumer(migrations.Postgres), b, consumertest.Postgres(pgDSN(t)), consumertest.CorpusDir(t.TempDir()))
}

func FuzzMigrations(f *testing.F) { consumertest.Fuzz(f, consumer(migrations.SQLite)) }
