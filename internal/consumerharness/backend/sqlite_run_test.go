package backend

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/internal/consumerharness/sqlclock"
)

func startRun(t *testing.T, params string) *sqliteRun {
	t.Helper()
	s, err := SQLite{Params: params}.Start(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s.(*sqliteRun)
}

// scenario is one scenario's database of run r with schema, as the
// harness prepares it (statement by statement, each rewritten for the
// database's clock); runs counts the times the schema ran.
func scenario(t *testing.T, r *sqliteRun, schema string, runs *int) *sqliteDB {
	t.Helper()
	db, err := r.Fresh(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	err = db.(Preparer).Prepare(context.Background(), func(admin *sql.DB) error {
		*runs++
		for _, stmt := range strings.Split(schema, ";") {
			if strings.TrimSpace(stmt) == "" {
				continue
			}
			q, _ := db.(Clocked).Rewrite(stmt)
			if _, err := admin.Exec(q); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return db.(*sqliteDB)
}

// TestSQLiteRunCopiesWhatTheSchemaMade: in a started run, the scenarios
// after the first get a copy of the file the schema made (seeded rows,
// rowids, AUTOINCREMENT counters), each a file of its own, without running
// the schema again; in WAL too.
func TestSQLiteRunCopiesWhatTheSchemaMade(t *testing.T) {
	for _, params := range []string{"", "_pragma=journal_mode(WAL)"} {
		r := startRun(t, params)
		runs := 0
		first := scenario(t, r, reuseSchema, &runs)
		want := dumpOf(t, first.Admin())
		if _, err := first.Admin().Exec(`INSERT INTO ledger (cents) VALUES (7)`); err != nil {
			t.Fatal(err)
		}
		seen := map[string]bool{first.path: true}
		for range 3 {
			db := scenario(t, r, reuseSchema, &runs)
			if seen[db.path] {
				t.Fatalf("params %q: two scenarios share %s", params, db.path)
			}
			seen[db.path] = true
			if got := dumpOf(t, db.Admin()); got != want {
				t.Fatalf("params %q: a copied database:\n%s\nwant what the schema made\n%s", params, got, want)
			}
			c := worker(t, db, &waits{t: t})
			mustExec(t, c, `INSERT INTO ledger (cents) VALUES (1)`)
			if n := mustCount(t, c, `SELECT max(id) FROM ledger`); n != 1 {
				t.Fatalf("params %q: AUTOINCREMENT gave %d, want 1", params, n)
			}
			if mode := mustQueryText(t, c, "PRAGMA journal_mode"); params != "" && mode != "wal" {
				t.Fatalf("params %q: the copy's journal_mode is %q", params, mode)
			}
		}
		if runs != 1 {
			t.Fatalf("params %q: the schema ran %d times, want once", params, runs)
		}
	}
}

// TestSQLiteRunRunsASchemaItCannotCopy: a schema that reads the
// database's clock (its statements name this scenario's clock), or sets
// a PRAGMA or a TEMP table on the admin connection, runs in every
// scenario.
func TestSQLiteRunRunsASchemaItCannotCopy(t *testing.T) {
	for _, schema := range []string{
		`CREATE TABLE t (x INTEGER, at TEXT DEFAULT CURRENT_TIMESTAMP)`,
		`CREATE TABLE t (x INTEGER); PRAGMA user_version = 3`,
		`CREATE TABLE t (x INTEGER); CREATE TEMP TABLE scratch (y)`,
		`CREATE TABLE t (x INTEGER); INSERT INTO t VALUES (random())`,
	} {
		r := startRun(t, "")
		runs := 0
		for range 3 {
			db := scenario(t, r, schema, &runs)
			if strings.Contains(schema, "CURRENT_TIMESTAMP") {
				now := time.Date(2001, 2, 3, 4, 5, 6, 0, time.UTC)
				db.SetClock(func() time.Time { return now })
				q, _ := db.Rewrite(`INSERT INTO t (x) VALUES (1)`)
				if _, err := db.Admin().Exec(q); err != nil {
					t.Fatal(err)
				}
				var at string
				if err := db.Admin().QueryRow(`SELECT at FROM t`).Scan(&at); err != nil || !strings.HasPrefix(at, "2001-02-03 04:05:06") {
					t.Fatalf("the column default read %q (%v), not the scenario's clock", at, err)
				}
			}
		}
		if runs != 3 {
			t.Errorf("%s: the schema ran %d times in 3 scenarios, want every time", schema, runs)
		}
	}
	if !strings.Contains(strings.ToLower(mustRewrite(`SELECT CURRENT_TIMESTAMP`)), strings.ToLower(sqlclock.SQLiteFunc)) {
		t.Fatal("the clock's rewriting changed: copiable no longer sees it")
	}
}

func mustRewrite(q string) string {
	out, _ := sqlclock.SQLite(q, 1)
	return out
}

// TestSQLiteRunOpensAhead: the next scenario's worker connections are
// opened ahead, as many as the last scenario asked for, and behave as
// ones opened at their first use: the declared busy timeout, the waits of
// whoever they are lent to.
func TestSQLiteRunOpensAhead(t *testing.T) {
	r := startRun(t, "_pragma=busy_timeout(5000)")
	runs := 0
	var db *sqliteDB
	// The database made ahead while the first plays is made as the one
	// before asked: the third is the first to follow the second.
	for range 2 {
		db = scenario(t, r, reuseSchema, &runs)
		worker(t, db, &waits{t: t}).Close()
		worker(t, db, &waits{t: t}).Close()
		db.Close()
	}
	db = scenario(t, r, reuseSchema, &runs)
	db.mu.Lock()
	spares := len(db.spares)
	db.mu.Unlock()
	if spares != 2 {
		t.Fatalf("%d connections opened ahead, want the last scenario's 2", spares)
	}
	wa, wb := &waits{t: t}, &waits{t: t}
	a, b := worker(t, db, wa), worker(t, db, wb)
	if n := mustCount(t, b, `PRAGMA busy_timeout`); n != 5000 {
		t.Fatalf("a connection opened ahead has busy_timeout %d", n)
	}
	txa := begin(t, a)
	mustExec(t, a, `INSERT INTO ledger (cents) VALUES (1)`)
	d, answer := blocked(t, b, wb, `INSERT INTO ledger (cents) VALUES (2)`)
	if d != 5*time.Second {
		t.Fatalf("wait got %v", d)
	}
	wantBusy(t, db, answer(false), time.Now(), "a connection opened ahead")
	txa.Rollback()
	if len(wa.got()) != 0 {
		t.Fatalf("the other borrower was asked to wait: %v", wa.got())
	}
}

// TestSQLiteRunCloseStopsWarming: Close stops the goroutine that opens
// ahead and removes the database it made.
func TestSQLiteRunCloseStopsWarming(t *testing.T) {
	s, err := SQLite{}.Start(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	r := s.(*sqliteRun)
	runs := 0
	db := scenario(t, r, reuseSchema, &runs)
	db.Close()
	// Let warm make the next database, then close the run.
	time.Sleep(50 * time.Millisecond)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-r.done:
	default:
		t.Fatal("the run's goroutine still runs after Close")
	}
	entries, _ := filepath.Glob(filepath.Join(ramDir(), fmt.Sprintf("%s%d-*", dbFilePrefix, os.Getpid())))
	for _, e := range entries {
		t.Errorf("%s left after the run closed", e)
	}
}

// TestCopiableReadsTheStatements: what a schema ran is judged by its
// tokens: a leading comment is skipped, a word in a comment is no call, and
// a call of the clock or of random() in the statement keeps it from being
// copied.
func TestCopiableReadsTheStatements(t *testing.T) {
	for _, c := range []struct {
		stmts []string
		want  bool
	}{
		{[]string{"-- the ledger\nCREATE TABLE t (x)", "/* seed */ INSERT INTO t VALUES (1)"}, true},
		{[]string{"CREATE TABLE t (x) -- random ids come later"}, true},
		{[]string{"CREATE TABLE t (x)", "INSERT INTO t VALUES (random())"}, false},
		{[]string{"INSERT INTO t VALUES (" + sqlclock.SQLiteFunc + "(3))"}, false},
		{[]string{"/* a */ CREATE TEMP TABLE s (y)"}, false},
		{[]string{"CREATE TEMPORARY TABLE s (y)"}, false},
		{[]string{"PRAGMA user_version = 3"}, false},
		{[]string{"-- nothing"}, false},
		{nil, false},
	} {
		if got := copiable(c.stmts); got != c.want {
			t.Errorf("copiable(%q) = %v, want %v", c.stmts, got, c.want)
		}
	}
}
