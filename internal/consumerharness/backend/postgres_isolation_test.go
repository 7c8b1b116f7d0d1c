package backend

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"
)

// ddlSchema is seededSchema with a function for event triggers and one
// for triggers.
const ddlSchema = seededSchema + `;
CREATE FUNCTION noop_event() RETURNS event_trigger LANGUAGE plpgsql AS $$ BEGIN END $$;
CREATE FUNCTION touch() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NEW; END $$`

// pgPrepared opens the next scenario's database on s, prepared with
// schema.
func pgPrepared(t *testing.T, s *pgSession, schema string) Database {
	t.Helper()
	ctx := context.Background()
	db, _ := s.Fresh(ctx)
	if err := db.(Preparer).Prepare(ctx, func(a *sql.DB) error { return runScript(a, schema) }); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// worker runs statements on a worker's connection of db, and gives it
// back.
func pgWorker(t *testing.T, db Database, stmts ...string) {
	t.Helper()
	c, err := db.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, q := range stmts {
		if _, err := c.(*pgConn).ExecContext(context.Background(), q, nil); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}

// catalog lists what the scenarios' database has beyond the template's:
// the team's schemas, relations, functions, triggers, event triggers and
// columns of accounts.
func catalog(t *testing.T, db Database) string {
	t.Helper()
	var got string
	err := db.Admin().QueryRow(`SELECT concat_ws(' | ',
  (SELECT string_agg(nspname, ',' ORDER BY nspname) FROM pg_namespace WHERE nspname NOT LIKE 'pg\_%' AND nspname NOT IN ('information_schema', 'idemcheck')),
  (SELECT string_agg(c.relname, ',' ORDER BY c.relname) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
     WHERE n.nspname NOT LIKE 'pg\_%' AND n.nspname NOT IN ('information_schema', 'idemcheck')),
  (SELECT string_agg(p.proname, ',' ORDER BY p.proname) FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
     WHERE n.nspname NOT LIKE 'pg\_%' AND n.nspname NOT IN ('information_schema', 'idemcheck')),
  (SELECT string_agg(tgname, ',' ORDER BY tgname) FROM pg_trigger WHERE NOT tgisinternal),
  (SELECT string_agg(evtname, ',' ORDER BY evtname) FROM pg_event_trigger),
  (SELECT string_agg(attname, ',' ORDER BY attnum) FROM pg_attribute WHERE attrelid = 'accounts'::regclass AND attnum > 0 AND NOT attisdropped))`).Scan(&got)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// TestPostgresWhatAScenarioMakesIsGoneFromTheNext: a scenario's DDL is
// gone when the next scenario starts: objects of its own (a schema, a
// table with a serial and a primary key, an index and a trigger on a
// table of the template, a view) are dropped (undo); a change to the
// template's objects (a column added, a table dropped) and an event
// trigger (which no event trigger sees) cost a new copy of the template;
// a temporary table, and CREATE TABLE IF NOT EXISTS of a table there is,
// cost nothing.
func TestPostgresWhatAScenarioMakesIsGoneFromTheNext(t *testing.T) {
	s := pgSessionForTest(t)
	db := pgPrepared(t, s, ddlSchema)
	want := catalog(t, db)
	for _, c := range []struct {
		name         string
		stmts        []string
		undos, copys int
	}{
		{"objects of its own", []string{
			"CREATE SCHEMA IF NOT EXISTS lib",
			"CREATE TABLE IF NOT EXISTS lib.offsets (id BIGSERIAL PRIMARY KEY, k TEXT UNIQUE, at TIMESTAMPTZ DEFAULT now())",
			"INSERT INTO lib.offsets (k) VALUES ('a')",
			"CREATE INDEX IF NOT EXISTS accounts_by_balance ON accounts (balance_cents)",
			"CREATE TRIGGER accounts_touched BEFORE UPDATE ON accounts FOR EACH ROW EXECUTE FUNCTION touch()",
			"CREATE VIEW lib.rich AS SELECT * FROM accounts WHERE balance_cents > 10",
			"CREATE TYPE lib.kind AS ENUM ('a', 'b')",
		}, 1, 0},
		{"a column of the template's", []string{"ALTER TABLE accounts ADD COLUMN note TEXT"}, 1, 1},
		{"a table of the template's", []string{"DROP TABLE ledger"}, 1, 2},
		{"an event trigger", []string{"CREATE EVENT TRIGGER noop ON ddl_command_start EXECUTE FUNCTION noop_event()"}, 1, 3},
		{"nothing", []string{
			"CREATE TEMP TABLE scratch (a int)",
			"CREATE TABLE IF NOT EXISTS accounts (user_id TEXT PRIMARY KEY)",
			"CREATE SCHEMA IF NOT EXISTS public",
		}, 1, 3},
	} {
		pgWorker(t, db, c.stmts...)
		pgWorker(t, db, "UPDATE accounts SET balance_cents = 0")
		db = pgPrepared(t, s, ddlSchema)
		if got := catalog(t, db); got != want {
			t.Errorf("%s: the next scenario starts with\n%s\nwant\n%s", c.name, got, want)
		}
		if got, want := state(t, db.Admin()), "u1=10 u2=20 | "; got != want {
			t.Errorf("%s: the next scenario starts from %q, want %q", c.name, got, want)
		}
		if s.undos != c.undos || s.copies != c.copys {
			t.Errorf("%s: %d undo(s) and %d copies so far, want %d and %d", c.name, s.undos, s.copies, c.undos, c.copys)
		}
	}
}

// TestPostgresPooledConnectionsStartAfresh: what a scenario left in a
// connection's session (a role, a prepared statement, a LISTEN, a cursor
// held past its transaction, a setting) is gone when the connection
// serves the next scenario.
func TestPostgresPooledConnectionsStartAfresh(t *testing.T) {
	s := pgSessionForTest(t)
	db := pgPrepared(t, s, seededSchema)
	pgWorker(t, db,
		"PREPARE mine AS SELECT 1",
		"LISTEN news",
		"BEGIN", "DECLARE held CURSOR WITH HOLD FOR SELECT 1", "COMMIT",
		"SET work_mem = '1234kB'",
		"SET ROLE pg_monitor")
	db.Close()
	db = pgPrepared(t, s, seededSchema)
	c, err := db.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	rows, err := c.(*pgConn).QueryContext(context.Background(), `SELECT current_user = session_user,
  (SELECT count(*) FROM pg_prepared_statements WHERE from_sql), (SELECT count(*) FROM pg_listening_channels()),
  (SELECT count(*) FROM pg_cursors WHERE name = 'held'), current_setting('work_mem')`, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := make([]driver.Value, 5)
	if err := rows.Next(got); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got) != "[true 0 0 0 4MB]" {
		t.Errorf("the pooled connection's session: %v, want [true 0 0 0 4MB] (own role, nothing prepared, listened or held, work_mem as set by the server)", got)
	}
}

// exists reports whether the server has database name.
func pgExists(t *testing.T, admin *sql.DB, name string) bool {
	t.Helper()
	var n int
	if err := admin.QueryRow("SELECT count(*) FROM pg_database WHERE datname = $1", name).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n > 0
}

// dsnAdmin is a handle on the DSN's database.
func dsnAdmin(t *testing.T) *sql.DB {
	t.Helper()
	dsn := os.Getenv("IDEMCHECK_POSTGRES_DSN")
	if dsn == "" {
		t.Skip("IDEMCHECK_POSTGRES_DSN is not set: skipping the PostgreSQL backend")
	}
	a, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	return a
}

// TestPostgresStartSweepsOnlyTheDeadRunsLeftovers: databases named as a
// run's whose run has no connection left are dropped by the next Start;
// a live run's, and a database merely named alike, are not.
func TestPostgresStartSweepsOnlyTheDeadRunsLeftovers(t *testing.T) {
	admin := dsnAdmin(t)
	live := pgSessionForTest(t)
	pgPrepared(t, live, ddlSchema)
	live.renew(context.Background(), func(a *sql.DB) error { return runScript(a, ddlSchema) })
	dead := fmt.Sprintf("idemcheck_r%d_999_0badc0de", os.Getpid())
	other := "idemcheck_r1_2_3_w" // not a run's name: the random part is 8 hex digits
	for _, name := range []string{dead + "_t", dead + "_w", other} {
		if _, err := admin.Exec("CREATE DATABASE " + ident(name)); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { admin.Exec("DROP DATABASE IF EXISTS " + ident(other)) })
	pgSessionForTest(t)
	for name, want := range map[string]bool{dead + "_t": false, dead + "_w": false, other: true, live.tmpl: true, live.work: true} {
		if got := pgExists(t, admin, name); got != want {
			t.Errorf("after a Start, database %s exists: %t, want %t", name, got, want)
		}
	}
	live.Close()
	for _, name := range []string{live.tmpl, live.work} {
		if pgExists(t, admin, name) {
			t.Errorf("Close left database %s", name)
		}
	}
}

// TestPostgresWithoutSuperuser: a role with CREATEDB but no superuser
// gets a new copy of the template every scenario, and the same state; a
// role without CREATEDB is told what it lacks.
func TestPostgresWithoutSuperuser(t *testing.T) {
	admin := dsnAdmin(t)
	for _, role := range []string{"idemcheck_test_createdb", "idemcheck_test_plain"} {
		if _, err := admin.Exec("DROP ROLE IF EXISTS " + role); err != nil {
			t.Fatal(err)
		}
		opts := "LOGIN"
		if role == "idemcheck_test_createdb" {
			opts += " CREATEDB"
		}
		if _, err := admin.Exec("CREATE ROLE " + role + " " + opts); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { admin.Exec("DROP ROLE IF EXISTS " + role) })
	}
	as := func(role string) string {
		u, err := url.Parse(os.Getenv("IDEMCHECK_POSTGRES_DSN"))
		if err != nil {
			t.Fatal(err)
		}
		u.User = url.User(role)
		return u.String()
	}
	ctx := context.Background()
	if _, err := (Postgres{DSN: as("idemcheck_test_plain")}).Start(ctx); err == nil || !strings.Contains(err.Error(), "CREATEDB") {
		t.Errorf("a role that may not create databases: %v, want an error naming CREATEDB", err)
	}
	ss, err := Postgres{DSN: as("idemcheck_test_createdb")}.Start(ctx)
	if err != nil {
		t.Fatal(err)
	}
	s := ss.(*pgSession)
	defer s.Close()
	for i := range 3 {
		db := pgPrepared(t, s, ddlSchema)
		if got, want := state(t, db.Admin()), "u1=10 u2=20 | "; got != want {
			t.Fatalf("scenario %d starts from %q, want %q", i, got, want)
		}
		pgWorker(t, db, "INSERT INTO ledger (user_id, cents) VALUES ('u1', 5)", "CREATE TABLE lib_offsets (k TEXT)")
		if got, want := state(t, db.Admin()), "u1=10 u2=20 | 1:5:10"; got != want {
			t.Fatalf("scenario %d: %q, want %q", i, got, want)
		}
		db.Close()
	}
	if s.fast || s.copies != 2 {
		t.Errorf("fast %t, %d copies: want every scenario after the first on a new copy", s.fast, s.copies)
	}
}

// TestPostgresRefusedWorkerStatementStopsTheRun: a worker's statement
// that would make a role is not run, and the next scenario does not
// start: the run says why.
func TestPostgresRefusedWorkerStatementStopsTheRun(t *testing.T) {
	s := pgSessionForTest(t)
	db := pgPrepared(t, s, seededSchema)
	c, _ := db.Open()
	_, err := c.(*pgConn).ExecContext(context.Background(), "CREATE ROLE idemcheck_test_never", nil)
	c.Close()
	if _, ok := err.(*Refused); !ok {
		t.Fatalf("CREATE ROLE answered %v, want a refusal", err)
	}
	var n int
	if err := db.Admin().QueryRow("SELECT count(*) FROM pg_roles WHERE rolname = 'idemcheck_test_never'").Scan(&n); err != nil || n != 0 {
		t.Fatalf("the role was made (%d, %v)", n, err)
	}
	db.Close()
	next, _ := s.Fresh(context.Background())
	err = next.(Preparer).Prepare(context.Background(), func(a *sql.DB) error { return runScript(a, seededSchema) })
	if err == nil || !strings.Contains(err.Error(), "CREATE ROLE idemcheck_test_never") {
		t.Fatalf("the next scenario: %v, want the refusal", err)
	}
	// The schema's own CREATE EXTENSION IF NOT EXISTS of an extension
	// template1 has (plpgsql) is let through.
	s2 := pgSessionForTest(t)
	pgPrepared(t, s2, "CREATE EXTENSION IF NOT EXISTS plpgsql; "+seededSchema)
}

// TestPostgresKeeperNamesTheRun: the run's connections bear its name, so
// that another Start tells a live run from a dead one.
func TestPostgresKeeperNamesTheRun(t *testing.T) {
	s := pgSessionForTest(t)
	admin := dsnAdmin(t)
	deadline := time.Now().Add(5 * time.Second)
	for {
		var n int
		if err := admin.QueryRow("SELECT count(*) FROM pg_stat_activity WHERE application_name = $1 AND datname = current_database()", s.run).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n == 1 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d connection(s) named %s on the DSN's database, want the keeper", n, s.run)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
