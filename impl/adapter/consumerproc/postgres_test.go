package consumerproc_test

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib"

	"github.com/idemcheck/idemcheck/consumertest"
	"github.com/idemcheck/idemcheck/impl/adapter/consumerproc"
	"github.com/idemcheck/idemcheck/impl/contract/handler"
)

// openPostgres opens a fresh schema at IDEMCHECK_POSTGRES_DSN with the
// test's tables, or skips.
func openPostgres(t *testing.T) *sql.DB {
	t.Helper()
	dsn := os.Getenv("IDEMCHECK_POSTGRES_DSN")
	if dsn == "" {
		t.Skip("IDEMCHECK_POSTGRES_DSN is not set: skipping the process consumer on PostgreSQL")
	}
	admin, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	schemaName := fmt.Sprintf("consumerproc_%d_%d", os.Getpid(), time.Now().UnixNano())
	if _, err := admin.Exec(`CREATE SCHEMA ` + schemaName); err != nil {
		t.Fatalf("postgres at IDEMCHECK_POSTGRES_DSN: %v", err)
	}
	t.Cleanup(func() {
		if a, err := sql.Open("pgx", dsn); err == nil {
			a.Exec(`DROP SCHEMA ` + schemaName + ` CASCADE`)
			a.Close()
		}
	})
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("search_path", schemaName)
	u.RawQuery = q.Encode()
	db, err := sql.Open("pgx", u.String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if _, err := db.Exec(strings.ReplaceAll(schema, "INTEGER", "BIGINT")); err != nil {
		t.Fatal(err)
	}
	return db
}

// TestPostgres: the same process runs on PostgreSQL (with its own
// placeholders); a duplicate is recognised by SQLSTATE 23505, and rolling
// back the aborted transaction leaves the worker usable.
func TestPostgres(t *testing.T) {
	db := openPostgres(t)
	env := []string{fakeEnv + "=ok", dollarEnv + "=1", "GORACE=atexit_sleep_ms=0"}
	f := start(t, consumerproc.Worker([]string{os.Args[0]}, consumerproc.Options{Env: env, Timeout: 5 * time.Second}))
	ctx := context.Background()
	for _, m := range []handler.Message{msg("e1", "u1", 5), msg("e1", "u1", 5), msg("e2", "u1", 7)} {
		if err := f(ctx, db, m); err != nil {
			t.Fatalf("deliver %s: %v", m.EventID, err)
		}
	}
	if got := ledger(t, db); got != "e1=5 e2=7" {
		t.Errorf("ledger %q, want one credit per event", got)
	}
}

// TestUnderTheHarnessOnPostgres: the process consumer (insert-first) is
// never flagged by the harness playing on PostgreSQL, where a duplicate
// aborts the transaction and must be rolled back. The process writes its
// placeholders by the database each delivery names ($1 here), and is
// reused from scenario to scenario.
func TestUnderTheHarnessOnPostgres(t *testing.T) {
	dsn := os.Getenv(consumertest.PostgresEnv)
	if dsn == "" {
		t.Skip("IDEMCHECK_POSTGRES_DSN is not set: skipping the process consumer under the harness on PostgreSQL")
	}
	pl := fakePool(t, "ok", "clear", 0)
	c := consumertest.Consumer{
		Name:    "insert-first-process",
		Schema:  strings.ReplaceAll(schema, "INTEGER", "BIGINT"),
		Worker:  pl.Worker,
		Effects: consumertest.PerEvent("SELECT event_id, amount_cents FROM ledger"),
	}
	res, err := consumertest.Hunt(c, consumertest.Postgres(dsn), consumertest.Checks(20), consumertest.Seed(1))
	if err != nil {
		t.Fatal(err)
	}
	if res.Failed {
		t.Fatalf("flagged on PostgreSQL:\n%s", res.Report())
	}
	if st := pl.Stats(); st.Reused == 0 {
		t.Errorf("stats %+v: want processes reused across scenarios", st)
	}
}

// TestPostgresDatabaseFromTheDriver: called directly, outside the harness,
// a delivery still names its database, told by the *sql.DB's driver.
func TestPostgresDatabaseFromTheDriver(t *testing.T) {
	db := openPostgres(t)
	f, c, err := fakePool(t, "remember", "clear", 0).Worker("w1", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if got := points(t, f, db, msg("e1", "u1", 5)); strings.Join(got, "|") != "w1 delivery 1 on postgres" {
		t.Errorf("points %q, want the delivery to name postgres", got)
	}
	if got := ledger(t, db); got != "e1=5" {
		t.Errorf("ledger %q", got)
	}
}
