package backend

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
)

// pgxPool opens a pgx pool on db, as a pgx worker's.
func pgxPool(t *testing.T, db Database) *pgxpool.Pool {
	t.Helper()
	cfg, err := db.(Pgx).PgxConfig()
	if err != nil {
		t.Fatal(err)
	}
	p, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestPostgresPgxSessionsStartAfresh: the session a pgx pool's connection
// leaves (a transaction open with a row lock, a session advisory lock, a
// statement it prepared, its cached statements, a setting, a role, a
// temporary table, a held cursor, a LISTEN) is the next pool's, on the
// same server process, rolled back and reset as a new session; the row
// the open transaction wrote is gone.
func TestPostgresPgxSessionsStartAfresh(t *testing.T) {
	s := pgSessionForTest(t)
	ctx := context.Background()
	db := pgPrepared(t, s, seededSchema)
	p := pgxPool(t, db)
	c, err := p.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var pid uint32
	if err := c.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&pid); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		"PREPARE mine AS SELECT 1",
		"LISTEN news",
		"SELECT pg_advisory_lock(42)",
		"CREATE TEMP TABLE scratch (x int)",
		"BEGIN", "DECLARE held CURSOR WITH HOLD FOR SELECT 1", "COMMIT",
		"SET work_mem = '1234kB'",
		"SET ROLE pg_monitor",
		"RESET ROLE",
		"BEGIN",
		"INSERT INTO accounts VALUES ('left open', 1)",
		"SET LOCAL ROLE pg_monitor",
	} {
		if _, err := c.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	// The connection is released inside its transaction: pgxpool closes
	// it, which gives its session back.
	c.Release()
	p.Close()

	p = pgxPool(t, db)
	defer p.Close()
	var got string
	err = p.QueryRow(ctx, `SELECT concat_ws(' ', pg_backend_pid() = $1, current_user = session_user,
  (SELECT count(*) FROM pg_prepared_statements), (SELECT count(*) FROM pg_listening_channels()),
  (SELECT count(*) FROM pg_cursors WHERE name = 'held'), (SELECT count(*) FROM pg_locks WHERE locktype = 'advisory'),
  to_regclass('pg_temp.scratch') IS NULL, current_setting('work_mem'),
  (SELECT count(*) FROM accounts WHERE user_id = 'left open'))`, pid).Scan(&got)
	if err != nil {
		t.Fatal(err)
	}
	// One prepared statement: the query itself, pgx's own.
	if want := "t t 1 0 0 0 t 4MB 0"; got != want {
		t.Errorf("the next pool's session: %q, want %q (the same process; own role, nothing prepared but this query, listened, held or locked, no temporary table, work_mem as the server sets it, the row rolled back)", got, want)
	}
}

// TestPostgresPgxSessionOfAClosedRunIsClosed: a session given back after
// its run closed is closed, not kept.
func TestPostgresPgxSessionOfAClosedRunIsClosed(t *testing.T) {
	s := pgSessionForTest(t)
	ctx := context.Background()
	db := pgPrepared(t, s, seededSchema)
	p := pgxPool(t, db)
	if _, err := p.Exec(ctx, "SELECT 1"); err != nil {
		t.Fatal(err)
	}
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	p.Close()
	s.mu.Lock()
	n := len(s.rawIdle)
	s.closed = false
	s.mu.Unlock()
	if n != 0 {
		t.Errorf("%d session(s) kept after the run closed, want none", n)
	}
}

// TestPostgresPgxSessionClosedMidQueryIsClosed: a connection closed under
// pgx while a query's rows are still coming (Kill closes a busy one)
// leaves the stream where pgx's reader stopped, maybe within a message:
// the reset cannot read it, and the session is closed rather than kept.
// The next pool gets a new server process, and the update the open
// transaction made is not there.
func TestPostgresPgxSessionClosedMidQueryIsClosed(t *testing.T) {
	s := pgSessionForTest(t)
	ctx := context.Background()
	db := pgPrepared(t, s, seededSchema)
	p := pgxPool(t, db)
	c, err := p.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var pid uint32
	if err := c.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&pid); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Exec(ctx, "BEGIN"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Exec(ctx, "UPDATE accounts SET balance_cents = 0"); err != nil {
		t.Fatal(err)
	}
	rows, err := c.Query(ctx, "SELECT repeat('x', 100) FROM generate_series(1, 100000)")
	if err != nil {
		t.Fatal(err)
	}
	if !rows.Next() {
		t.Fatal("no row")
	}
	// The network connection closes under pgx, as Kill closes a busy one.
	_ = c.Conn().PgConn().Conn().Close()
	rows.Close()
	c.Release()
	p.Close()

	p = pgxPool(t, db)
	defer p.Close()
	var got string
	if err := p.QueryRow(ctx, "SELECT concat_ws(' ', pg_backend_pid() = $1, (SELECT sum(balance_cents) FROM accounts))", pid).Scan(&got); err != nil {
		t.Fatal(err)
	}
	if got != "f 30" {
		t.Errorf("the next pool's session: %q, want \"f 30\" (a new process, the update not there)", got)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range s.rawIdle {
		if _, err := r.conn.Write(nil); err != nil {
			t.Errorf("an idle session is closed: %v", err)
		}
	}
}
