package backend

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"strings"
	"testing"
)

func reuseSession(t *testing.T) Session {
	t.Helper()
	s, err := SQLiteReuse{}.Start(context.Background())
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

// TestSQLiteReuseFallsBackWhenAResetCannotRestore: a schema whose state a
// reset cannot bring back (putting the seeded rows back fires a trigger
// that writes a table restored before) gets a new database per scenario.
func TestSQLiteReuseFallsBackWhenAResetCannotRestore(t *testing.T) {
	s := reuseSession(t)
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
