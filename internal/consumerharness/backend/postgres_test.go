package backend

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"os"
	"testing"

	"github.com/idemcheck/idemcheck/internal/sqlscan"
)

func pgSessionForTest(tb testing.TB) *pgSession {
	tb.Helper()
	dsn := os.Getenv("IDEMCHECK_POSTGRES_DSN")
	if dsn == "" {
		tb.Skip("IDEMCHECK_POSTGRES_DSN is not set: skipping the PostgreSQL backend")
	}
	s, err := Postgres{DSN: dsn}.Start(context.Background())
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { s.Close() })
	return s.(*pgSession)
}

const seededSchema = `
CREATE TABLE accounts (user_id TEXT PRIMARY KEY, balance_cents BIGINT NOT NULL);
INSERT INTO accounts VALUES ('u1', 10), ('u2', 20);
CREATE TABLE ledger (id BIGSERIAL PRIMARY KEY, user_id TEXT NOT NULL REFERENCES accounts, cents BIGINT NOT NULL,
  doubled BIGINT GENERATED ALWAYS AS (cents * 2) STORED)`

func runScript(db *sql.DB, script string) error {
	for _, stmt := range sqlscan.Split(script) {
		if _, err := db.Exec(stmt); err != nil {
			return err
		}
	}
	return nil
}

func state(t *testing.T, db *sql.DB) string {
	t.Helper()
	var accounts, ledger string
	if err := db.QueryRow(`SELECT string_agg(user_id || '=' || balance_cents, ' ' ORDER BY user_id) FROM accounts`).Scan(&accounts); err != nil {
		t.Fatal(err)
	}
	if err := db.QueryRow(`SELECT coalesce(string_agg(id || ':' || cents || ':' || doubled, ' ' ORDER BY id), '') FROM ledger`).Scan(&ledger); err != nil {
		t.Fatal(err)
	}
	return accounts + " | " + ledger
}

// seededScenario is a scenario's database of a session of its own,
// prepared with seededSchema, and two worker connections to it.
func seededScenario(t *testing.T) (Database, *pgConn, *pgConn) {
	t.Helper()
	ctx := context.Background()
	db, err := pgSessionForTest(t).Fresh(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if err := db.(Preparer).Prepare(ctx, func(a *sql.DB) error { return runScript(a, seededSchema) }); err != nil {
		t.Fatal(err)
	}
	var conns [2]*pgConn
	for i := range conns {
		c, err := db.Open()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		conns[i] = c.(*pgConn)
	}
	return db, conns[0], conns[1]
}

// TestPostgresResetRestoresTheSchemasState: the second scenario starts
// from the seeded rows and the sequences as the schema left them.
func TestPostgresResetRestoresTheSchemasState(t *testing.T) {
	s := pgSessionForTest(t)
	ctx := context.Background()
	for i := range 3 {
		db, _ := s.Fresh(ctx)
		if err := db.(Preparer).Prepare(ctx, func(a *sql.DB) error { return runScript(a, seededSchema) }); err != nil {
			t.Fatal(err)
		}
		if got, want := state(t, db.Admin()), "u1=10 u2=20 | "; got != want {
			t.Fatalf("scenario %d starts from %q, want %q", i, got, want)
		}
		if _, err := db.Admin().Exec(`UPDATE accounts SET balance_cents = 99; INSERT INTO ledger (user_id, cents) VALUES ('u1', 5)`); err != nil {
			t.Fatal(err)
		}
		if got, want := state(t, db.Admin()), "u1=99 u2=99 | 1:5:10"; got != want {
			t.Fatalf("scenario %d: %q, want %q (the sequence starts again at 1)", i, got, want)
		}
		db.Close()
	}
}

// TestPostgresClosedConnectionRollsBackAtOnce: a worker connection closed
// inside a transaction is rolled back before Close returns, so its locks
// are gone for the next statement.
func TestPostgresClosedConnectionRollsBackAtOnce(t *testing.T) {
	s := pgSessionForTest(t)
	ctx := context.Background()
	db, _ := s.Fresh(ctx)
	defer db.Close()
	if err := db.(Preparer).Prepare(ctx, func(a *sql.DB) error { return runScript(a, seededSchema) }); err != nil {
		t.Fatal(err)
	}
	a, err := db.Open()
	if err != nil {
		t.Fatal(err)
	}
	pa := a.(*pgConn)
	if _, err := pa.BeginTx(ctx, driver.TxOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := pa.ExecContext(ctx, "UPDATE accounts SET balance_cents = 1 WHERE user_id = 'u1'", nil); err != nil {
		t.Fatal(err)
	}
	b, _ := db.Open()
	pb := b.(*pgConn)
	if _, err := pb.BeginTx(ctx, driver.TxOptions{}); err != nil {
		t.Fatal(err)
	}
	_, err = pb.ExecContext(ctx, "UPDATE accounts SET balance_cents = 2 WHERE user_id = 'u1'", nil)
	if !db.IsBusy(err) {
		t.Fatalf("a statement meeting another's row lock answered %v, want a lock timeout", err)
	}
	// The savepoint kept b's transaction alive.
	if _, err := pb.ExecContext(ctx, "UPDATE accounts SET balance_cents = 3 WHERE user_id = 'u2'", nil); err != nil {
		t.Fatalf("b's transaction did not survive the wait: %v", err)
	}
	a.Close() // a crash: rolled back now
	if _, err := pb.ExecContext(ctx, "UPDATE accounts SET balance_cents = 2 WHERE user_id = 'u1'", nil); err != nil {
		t.Fatalf("a's lock outlived its Close: %v", err)
	}
	if _, err := pb.ExecContext(ctx, "COMMIT", nil); err != nil {
		t.Fatal(err)
	}
	b.Close()
	if got, want := state(t, db.Admin()), "u1=2 u2=3 | "; got != want {
		t.Fatalf("state %q, want %q", got, want)
	}
}

// BenchmarkPostgresReset compares ways to bring a small schema back to its
// starting state between scenarios: delete (the reset), TRUNCATE,
// dropping and creating the tables again, the reset after undoing a table
// the scenario made, and a new copy of the run's template database.
func BenchmarkPostgresReset(b *testing.B) {
	s := pgSessionForTest(b)
	ctx := context.Background()
	const schema = `CREATE TABLE ledger (event_id TEXT NOT NULL, amount_cents INTEGER NOT NULL);
CREATE TABLE processed_events (event_id TEXT PRIMARY KEY)`
	run := func(a *sql.DB) error { return runScript(a, schema) }
	prepare := func() {
		db, _ := s.Fresh(ctx)
		if err := db.(Preparer).Prepare(ctx, run); err != nil {
			b.Fatal(err)
		}
	}
	prepare()
	fill := "INSERT INTO ledger VALUES ('e1', 1); INSERT INTO processed_events VALUES ('e1')"
	for _, way := range []struct {
		name, fill string
		reset      func() error
	}{
		{"delete", fill, func() error { return s.adminExec(ctx, s.reset) }},
		{"truncate", fill, func() error { return s.adminExec(ctx, "TRUNCATE ledger, processed_events") }},
		{"drop-create", fill, func() error {
			return s.adminExec(ctx, "BEGIN; DROP TABLE ledger, processed_events; "+schema+"; DELETE FROM idemcheck.ddl; COMMIT")
		}},
		{"undo", fill + "; CREATE TABLE lib_offsets (k TEXT PRIMARY KEY, v BIGINT)", func() error { prepare(); return nil }},
		{"copy", fill, func() error { return s.renew(ctx, run) }},
	} {
		b.Run(way.name, func(b *testing.B) {
			for b.Loop() {
				if err := s.adminExec(ctx, way.fill); err != nil {
					b.Fatal(err)
				}
				if err := way.reset(); err != nil {
					b.Fatal(fmt.Errorf("%s: %w", way.name, err))
				}
			}
		})
	}
}

// TestPostgresWaitWithoutSavepointIsFinal: a statement inside a
// transaction that waits for a lock no transaction holds (a session-level
// advisory lock) aborts the transaction, as a real lock timeout does, and
// its error is not a wait to retry.
func TestPostgresWaitWithoutSavepointIsFinal(t *testing.T) {
	ctx := context.Background()
	db, pa, pb := seededScenario(t)
	if _, err := pa.ExecContext(ctx, "SELECT pg_advisory_lock(7)", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := pb.BeginTx(ctx, driver.TxOptions{}); err != nil {
		t.Fatal(err)
	}
	_, err := pb.ExecContext(ctx, "SELECT pg_advisory_xact_lock(7)", nil)
	var st interface{ SQLState() string }
	if err == nil || db.IsBusy(err) || !errors.As(err, &st) || st.SQLState() != "55P03" {
		t.Fatalf("got %v, want a final lock timeout (SQLSTATE 55P03)", err)
	}
	if _, err := pb.ExecContext(ctx, "ROLLBACK", nil); err != nil {
		t.Fatal(err)
	}
}

// TestIsTxEnd: a statement that ends the transaction is known however it
// is written; one that does not is not taken for one.
func TestIsTxEnd(t *testing.T) {
	for q, want := range map[string][2]bool{
		"COMMIT":                     {true, true},
		"commit;":                    {true, true},
		" End Transaction ":          {true, true},
		"COMMIT WORK AND NO CHAIN":   {true, true},
		"/* done */ COMMIT -- now\n": {true, true},
		"ROLLBACK":                   {true, false},
		"abort work;":                {true, false},
		"ROLLBACK TO SAVEPOINT s":    {false, false},
		"COMMIT PREPARED 'x'":        {false, false},
		"COMMIT; BEGIN":              {false, false},
		"SELECT 'COMMIT'":            {false, false},
		"-- COMMIT\nSELECT 1":        {false, false},
		"":                           {false, false},
	} {
		if end, commit := isTxEnd(q); [2]bool{end, commit} != want {
			t.Errorf("isTxEnd(%q) = %v, %v; want %v", q, end, commit, want)
		}
	}
}

// TestPostgresCommitWithASemicolonWhileOthersWait: a COMMIT written with
// a semicolon, while another connection is in a transaction, commits
// without the savepoint a wait is retried under (which would not outlive
// it).
func TestPostgresCommitWithASemicolonWhileOthersWait(t *testing.T) {
	ctx := context.Background()
	db, pa, pb := seededScenario(t)
	if _, err := pa.BeginTx(ctx, driver.TxOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := pa.ExecContext(ctx, "UPDATE accounts SET balance_cents = 5 WHERE user_id = 'u2'", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := pb.ExecContext(ctx, "BEGIN", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := pb.ExecContext(ctx, "UPDATE accounts SET balance_cents = 4 WHERE user_id = 'u1'", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := pb.ExecContext(ctx, "COMMIT; -- done", nil); err != nil {
		t.Fatalf("COMMIT; answered %v", err)
	}
	if _, err := pa.ExecContext(ctx, "ROLLBACK", nil); err != nil {
		t.Fatal(err)
	}
	if got, want := state(t, db.Admin()), "u1=4 u2=20 | "; got != want {
		t.Fatalf("state %q, want %q", got, want)
	}
}
