package backend

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func reuseSession(t *testing.T) Session {
	t.Helper()
	return reuseSessionWith(t, "")
}

func reuseSessionWith(t *testing.T, params string) Session {
	t.Helper()
	s, err := SQLiteReuse{Params: params}.Start(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// prepared is one scenario's database, brought to the schema's state.
func prepared(t *testing.T, s Session, schema string) Database {
	t.Helper()
	db, err := s.Fresh(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	run := func(admin *sql.DB) error {
		_, err := admin.Exec(schema)
		return err
	}
	// A no-op for the run's database; a new database (the reset could not
	// restore) is removed.
	t.Cleanup(func() { db.Close() })
	if p, ok := db.(Preparer); ok {
		err = p.Prepare(context.Background(), run)
	} else {
		err = run(db.Admin()) // a new database (the reset could not restore)
	}
	if err != nil {
		t.Fatal(err)
	}
	return db
}

func dumpOf(t *testing.T, db *sql.DB) string {
	t.Helper()
	var b strings.Builder
	for _, q := range []string{`SELECT rowid, user_id, balance_cents FROM accounts ORDER BY rowid`, `SELECT rowid, id, cents FROM ledger ORDER BY rowid`,
		`SELECT name, seq FROM sqlite_sequence ORDER BY name`} {
		rows, err := db.Query(q)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var a, b2, c any
			if err := rows.Scan(&a, &b2, &c); err != nil {
				t.Fatal(err)
			}
			b.WriteString(strings.TrimSpace(strings.Join([]string{toString(a), toString(b2), toString(c)}, ",")) + ";")
		}
		rows.Close()
	}
	return b.String()
}

func toString(v any) string {
	switch v := v.(type) {
	case []byte:
		return string(v)
	case nil:
		return "NULL"
	}
	return fmt.Sprint(v)
}

const reuseSchema = `
CREATE TABLE accounts (user_id TEXT PRIMARY KEY, balance_cents INTEGER NOT NULL);
INSERT INTO accounts VALUES ('u1', 10), ('u2', 20);
CREATE TABLE ledger (id INTEGER PRIMARY KEY AUTOINCREMENT, cents INTEGER NOT NULL)`

// TestSQLiteReuseRestoresTheSchemasState: every scenario after the first
// starts from the state the schema left: seeded rows, rowids and
// AUTOINCREMENT counters included, whatever the last scenario did.
func TestSQLiteReuseRestoresTheSchemasState(t *testing.T) {
	s := reuseSession(t)
	db := prepared(t, s, reuseSchema)
	want := dumpOf(t, db.Admin())
	if !strings.Contains(want, "u2,20") {
		t.Fatalf("seeded rows missing: %s", want)
	}
	for range 3 {
		for _, q := range []string{`UPDATE accounts SET balance_cents = 99`, `INSERT INTO ledger (cents) VALUES (5), (6)`,
			`DELETE FROM accounts WHERE user_id = 'u1'`, `INSERT INTO accounts VALUES ('u3', 1)`} {
			if _, err := db.Admin().Exec(q); err != nil {
				t.Fatal(err)
			}
		}
		db = prepared(t, s, reuseSchema)
		if got := dumpOf(t, db.Admin()); got != want {
			t.Fatalf("after a reset:\n%s\nwant\n%s", got, want)
		}
	}
}

// TestSQLiteReuseFallsBackWhenAResetCannotRestore: in WAL, where a reset
// deletes the rows and puts the seeded ones back, a schema whose state
// that cannot bring back (putting the seeded rows back fires a trigger
// that writes a table restored before) gets a new database per scenario.
func TestSQLiteReuseFallsBackWhenAResetCannotRestore(t *testing.T) {
	s := reuseSessionWith(t, "_journal_mode=WAL")
	schema := reuseSchema + `;
CREATE TABLE a_audit (n INTEGER);
CREATE TRIGGER seen AFTER INSERT ON accounts BEGIN INSERT INTO a_audit VALUES (1); END`
	prepared(t, s, schema)
	if !s.(*sqliteSession).fresh {
		t.Fatal("the reset fires a trigger, yet the session reuses its database")
	}
	db := prepared(t, s, schema)
	var n int
	if err := db.Admin().QueryRow(`SELECT count(*) FROM a_audit`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("a new database has %d audit rows (%v), want none: the schema's seeds come before the trigger", n, err)
	}
}

// TestSQLiteReusePoolsRolledBackConnections: a worker's connection that
// closes mid-transaction goes back to the pool rolled back, with its
// prepared statements; a statement whose rows are open is not lent twice.
func TestSQLiteReusePoolsRolledBackConnections(t *testing.T) {
	s := reuseSession(t)
	db := prepared(t, s, reuseSchema)
	raw, err := db.Open()
	if err != nil {
		t.Fatal(err)
	}
	c := raw.(driver.ConnBeginTx)
	ctx := context.Background()
	if _, err := c.BeginTx(ctx, driver.TxOptions{}); err != nil {
		t.Fatal(err)
	}
	ex := raw.(driver.ExecerContext)
	if _, err := ex.ExecContext(ctx, `INSERT INTO ledger (cents) VALUES (1)`, nil); err != nil {
		t.Fatal(err)
	}
	q := raw.(driver.QueryerContext)
	rows1, err := q.QueryContext(ctx, `SELECT cents FROM ledger`, nil)
	if err != nil {
		t.Fatal(err)
	}
	rows2, err := q.QueryContext(ctx, `SELECT cents FROM ledger`, nil)
	if err != nil {
		t.Fatal(err)
	}
	dest := []driver.Value{nil}
	if err := rows1.Next(dest); err != nil || dest[0] != int64(1) {
		t.Fatalf("first rows: %v %v", dest, err)
	}
	if err := rows2.Next(dest); err != nil || dest[0] != int64(1) {
		t.Fatalf("second rows of the same statement: %v %v", dest, err)
	}
	rows1.Close()
	rows2.Close()
	raw.Close()
	var n int
	if err := db.Admin().QueryRow(`SELECT count(*) FROM ledger`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("the closed connection's transaction was not rolled back: %d rows, %v", n, err)
	}
	again, err := db.Open()
	if err != nil {
		t.Fatal(err)
	}
	if again != raw {
		t.Error("the pool opened a new connection instead of lending the idle one")
	}
	if _, err := again.(driver.ExecerContext).ExecContext(ctx, `INSERT INTO ledger (cents) VALUES (2)`, nil); err != nil {
		t.Fatal(err)
	}
	again.Close()
}

// TestSQLiteReuseWaitsAsDeclared: the run's database follows the team's
// settings (here BEGIN IMMEDIATE and a 5 s busy timeout); a pooled
// connection's waits are decided by whoever it is lent to, and it comes
// back to the pool with the declared busy timeout, whatever PRAGMA
// busy_timeout the last borrower ran (a PRAGMA is never kept prepared, so
// the next borrower's applies again).
func TestSQLiteReuseWaitsAsDeclared(t *testing.T) {
	s := reuseSessionWith(t, "_pragma=busy_timeout(5000)&_txlock=immediate")
	db := prepared(t, s, reuseSchema)
	path := s.(*sqliteSession).path
	if !exists(path) || filepath.Dir(path) != ramDir() {
		t.Fatalf("the run's database %s is not a file in %s", path, ramDir())
	}
	wa, wb := &waits{t: t}, &waits{t: t}
	a, err := db.(Waiter).OpenWaiting(wa.wait)
	if err != nil {
		t.Fatal(err)
	}
	b, err := db.(Waiter).OpenWaiting(wb.wait)
	if err != nil {
		t.Fatal(err)
	}
	txa := begin(t, a) // IMMEDIATE: the write lock at BEGIN
	d, answer := blocked(t, b, wb, `BEGIN IMMEDIATE`)
	if d != 5*time.Second {
		t.Fatalf("wait got %v, want the declared 5s", d)
	}
	wantBusy(t, db, answer(false), time.Now(), "a BEGIN given up")
	if err := txa.Rollback(); err != nil {
		t.Fatal(err)
	}

	mustExec(t, b, `PRAGMA busy_timeout = 1234`)
	if n := mustCount(t, b, `PRAGMA busy_timeout`); n != 1234 {
		t.Fatalf("busy_timeout %d after the PRAGMA", n)
	}
	b.Close()
	wc := &waits{t: t}
	c, err := db.(Waiter).OpenWaiting(wc.wait)
	if err != nil {
		t.Fatal(err)
	}
	if c != b {
		t.Fatal("the pool opened a new connection instead of lending the idle one")
	}
	if n := mustCount(t, c, `PRAGMA busy_timeout`); n != 5000 {
		t.Fatalf("the pooled connection came back with busy_timeout %d, want the declared 5000", n)
	}
	mustExec(t, c, `PRAGMA busy_timeout = 1234`)
	if n := mustCount(t, c, `PRAGMA busy_timeout`); n != 1234 {
		t.Fatalf("the same PRAGMA run again did not apply: busy_timeout %d", n)
	}
	txa = begin(t, a)
	d, answer = blocked(t, c, wc, `INSERT INTO ledger (cents) VALUES (1)`)
	if d != 1234*time.Millisecond {
		t.Fatalf("wait got %v, want 1.234s", d)
	}
	wantBusy(t, db, answer(false), time.Now(), "an insert given up")
	if len(wb.got()) != 1 {
		t.Fatalf("the last borrower's wait was asked again: %v", wb.got())
	}
	txa.Rollback()
	a.Close()
	c.Close()
}

// TestSQLiteReuseRemovesItsFile: the run's database goes with the run.
func TestSQLiteReuseRemovesItsFile(t *testing.T) {
	s, err := SQLiteReuse{Params: "_journal_mode=WAL"}.Start(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	path := s.(*sqliteSession).path
	prepared(t, s, reuseSchema)
	if !exists(path) || !exists(path+"-wal") {
		t.Fatalf("no database and WAL at %s", path)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	for _, suffix := range []string{"", "-journal", "-wal", "-shm"} {
		if exists(path + suffix) {
			t.Errorf("%s left after Close", path+suffix)
		}
	}
}

// TestSQLiteReuseWritesTheFileBack: in rollback-journal mode a reset
// writes back the file the schema made, so that a schema whose rows a
// reset by statements could not restore (a trigger) is restored exactly;
// and every pooled connection sees the restored database: its pages,
// however many commits the scenarios made (the change counter never comes
// back to a value a connection saw), and its schema when a scenario
// changed it (likewise the schema cookie).
func TestSQLiteReuseWritesTheFileBack(t *testing.T) {
	schema := reuseSchema + `;
CREATE TABLE a_audit (n INTEGER);
CREATE TRIGGER seen AFTER INSERT ON accounts BEGIN INSERT INTO a_audit VALUES (1); END`
	s := reuseSessionWith(t, "")
	db := prepared(t, s, schema)
	if s.(*sqliteSession).fresh || s.(*sqliteSession).file == nil {
		t.Fatal("the session does not write the schema's file back")
	}
	want := dumpOf(t, db.Admin())
	// Each round, one connection commits once and the other reads: the
	// reader of a round may be the writer of the last, whose cache holds
	// the last round's page at the same count of commits since a reset.
	for round := range 4 {
		c1, c2 := mustOpen(t, db), mustOpen(t, db)
		mustExec(t, c2, fmt.Sprintf(`INSERT INTO ledger (cents) VALUES (%d)`, round+1))
		if n := mustCount(t, c1, `SELECT sum(cents) FROM ledger`); n != int64(round+1) {
			t.Fatalf("round %d: a connection reads %d, want %d: its cached pages outlived a reset", round, n, round+1)
		}
		mustExec(t, c1, `INSERT INTO accounts VALUES ('u9', 1)`)
		c1.Close()
		c2.Close()
		db = prepared(t, s, schema)
		if got := dumpOf(t, db.Admin()); got != want {
			t.Fatalf("round %d: after a reset:\n%s\nwant\n%s", round, got, want)
		}
		// The trigger comes after the seeds: the schema left no audit row,
		// where putting the seeds back by INSERT would make two.
		var audit int
		if err := db.Admin().QueryRow(`SELECT count(*) FROM a_audit`).Scan(&audit); err != nil || audit != 0 {
			t.Fatalf("round %d: %d audit rows (%v), want the schema's none", round, audit, err)
		}
	}
	// Each round a scenario makes another table: one connection makes it,
	// the other reads it, which the last round's schema, read at the same
	// count of schema changes since a reset, does not have.
	for round := range 4 {
		c1, c2 := mustOpen(t, db), mustOpen(t, db)
		mustExec(t, c2, fmt.Sprintf(`CREATE TABLE extra_%d (v)`, round))
		if _, err := count(c1, fmt.Sprintf(`SELECT count(*) FROM extra_%d`, round)); err != nil {
			t.Fatalf("round %d: a connection does not see the new table (its schema outlived a reset): %v", round, err)
		}
		if round > 0 {
			if _, err := count(c1, fmt.Sprintf(`SELECT count(*) FROM extra_%d`, round-1)); err == nil {
				t.Fatalf("round %d: a connection still sees the table the last scenario made", round)
			}
		}
		c1.Close()
		c2.Close()
		db = prepared(t, s, schema)
		if got := dumpOf(t, db.Admin()); got != want {
			t.Fatalf("round %d: after a reset:\n%s\nwant\n%s", round, got, want)
		}
	}
}

// TestSQLiteReuseResetWithALockHeld: a reset while a connection holds a
// lock writes nothing over it and fails, naming the lock.
func TestSQLiteReuseResetWithALockHeld(t *testing.T) {
	s := reuseSessionWith(t, "")
	db := prepared(t, s, reuseSchema)
	c := mustOpen(t, db)
	mustExec(t, c, `INSERT INTO ledger (cents) VALUES (1)`)
	tx := begin(t, c)
	mustExec(t, c, `INSERT INTO ledger (cents) VALUES (2)`)
	err := db.(Preparer).Prepare(context.Background(), func(*sql.DB) error { return nil })
	if err == nil || !db.IsBusy(err) {
		t.Fatalf("a reset under a held lock: %v", err)
	}
	if n := mustCount(t, c, `SELECT count(*) FROM ledger`); n != 2 {
		t.Fatalf("the holder's transaction sees %d rows, want its 2", n)
	}
	tx.Rollback()
	c.Close()
}

func mustOpen(t *testing.T, db Database) driver.Conn {
	t.Helper()
	c, err := db.Open()
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestIsPragma: a PRAGMA is known by its first word, after comments and
// stray semicolons, so that it is never kept prepared.
func TestIsPragma(t *testing.T) {
	for q, want := range map[string]bool{
		"PRAGMA busy_timeout = 10":             true,
		" ;pragma journal_mode":                true,
		"/* wait less */ PRAGMA busy_timeout":  true,
		"-- x\nPRAGMA foreign_keys = ON":       true,
		"SELECT * FROM pragma_table_info('t')": false,
		"pragmatic":                            false,
		"-- PRAGMA x\nSELECT 1":                false,
	} {
		if got := isPragma(q); got != want {
			t.Errorf("isPragma(%q) = %v, want %v", q, got, want)
		}
	}
}
