package backend

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// fresh is a scenario's SQLite database with params, a table t(x) holding
// one row, closed when the test ends.
func fresh(t *testing.T, params string) *sqliteDB {
	t.Helper()
	db, err := SQLite{Params: params}.Fresh(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if _, err := db.Admin().Exec(`CREATE TABLE t (x INTEGER); INSERT INTO t VALUES (1)`); err != nil {
		t.Fatal(err)
	}
	return db.(*sqliteDB)
}

// waits records the waits of a connection and answers each with answer
// (nil: the test fails, no wait was expected).
type waits struct {
	t      *testing.T
	mu     sync.Mutex
	asked  []time.Duration
	answer func(time.Duration) bool
}

func (w *waits) wait(timeout time.Duration) bool {
	w.mu.Lock()
	w.asked = append(w.asked, timeout)
	w.mu.Unlock()
	if w.answer == nil {
		w.t.Errorf("the engine waited (timeout %v) where it must not", timeout)
		return false
	}
	return w.answer(timeout)
}

func (w *waits) got() []time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.asked)
}

// worker opens a worker connection whose waits w decides.
func worker(t *testing.T, db Database, w *waits) driver.Conn {
	t.Helper()
	c, err := db.(Waiter).OpenWaiting(w.wait)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func execOn(c driver.Conn, q string) error {
	_, err := c.(driver.ExecerContext).ExecContext(context.Background(), q, nil)
	return err
}

func mustExec(t *testing.T, c driver.Conn, q string) {
	t.Helper()
	if err := execOn(c, q); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}

// count runs a query of one integer on c.
func count(c driver.Conn, q string) (int64, error) {
	rows, err := c.(driver.QueryerContext).QueryContext(context.Background(), q, nil)
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	dest := []driver.Value{nil}
	if err := rows.Next(dest); err != nil {
		return 0, err
	}
	n, _ := dest[0].(int64)
	return n, nil
}

func mustCount(t *testing.T, c driver.Conn, q string) int64 {
	t.Helper()
	n, err := count(c, q)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return n
}

func begin(t *testing.T, c driver.Conn) driver.Tx {
	t.Helper()
	tx, err := c.(driver.ConnBeginTx).BeginTx(context.Background(), driver.TxOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return tx
}

// wantBusy checks that err is the engine's busy answer, given at once.
func wantBusy(t *testing.T, db Database, err error, since time.Time, what string) {
	t.Helper()
	if err == nil || !db.IsBusy(err) {
		t.Fatalf("%s: want a busy error, got %v", what, err)
	}
	if d := time.Since(since); d > 2*time.Second {
		t.Fatalf("%s: the busy answer took %v: something slept on the machine's clock", what, d)
	}
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// TestSQLiteDefaultsAreSQLites: with no params, a rollback journal, no
// busy timeout, deferred BEGIN; the database is a real file in the
// RAM-backed directory.
func TestSQLiteDefaultsAreSQLites(t *testing.T) {
	db := fresh(t, "")
	c := worker(t, db, &waits{t: t})
	if mode := mustQueryText(t, c, "PRAGMA journal_mode"); mode != "delete" {
		t.Errorf("journal_mode %q, want delete", mode)
	}
	if n := mustCount(t, c, "PRAGMA busy_timeout"); n != 0 {
		t.Errorf("busy_timeout %d, want 0", n)
	}
	if db.params.begin != "BEGIN" {
		t.Errorf("begins with %q, want BEGIN (deferred)", db.params.begin)
	}
	if !exists(db.path) || filepath.Dir(db.path) != ramDir() {
		t.Errorf("the database %s is not a file in %s", db.path, ramDir())
	}
	if _, err := os.Stat("/dev/shm"); err == nil && ramDir() != "/dev/shm" {
		t.Logf("note: /dev/shm exists but is not used (not writable?): %s", ramDir())
	}
}

func mustQueryText(t *testing.T, c driver.Conn, q string) string {
	t.Helper()
	rows, err := c.(driver.QueryerContext).QueryContext(context.Background(), q, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	dest := []driver.Value{nil}
	if err := rows.Next(dest); err != nil {
		t.Fatal(err)
	}
	return strings.ToLower(fmt.Sprint(dest[0]))
}

// TestSQLiteAReaderGetsInBesideAWriter: in rollback-journal mode a reader
// on a second connection, while the first's transaction holds the write
// lock (RESERVED), reads the committed state at once, without waiting (an
// in-memory memdb database answered busy there).
func TestSQLiteAReaderGetsInBesideAWriter(t *testing.T) {
	db := fresh(t, "_pragma=busy_timeout(5000)")
	a, b := worker(t, db, &waits{t: t}), worker(t, db, &waits{t: t})
	tx := begin(t, a)
	mustExec(t, a, `INSERT INTO t VALUES (2)`)
	if !exists(db.path + "-journal") {
		t.Errorf("no rollback journal beside %s during a write transaction", db.path)
	}
	if n := mustCount(t, b, `SELECT count(*) FROM t`); n != 1 {
		t.Fatalf("the reader sees %d rows, want the committed 1", n)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if n := mustCount(t, b, `SELECT count(*) FROM t`); n != 2 {
		t.Fatalf("after the commit the reader sees %d rows, want 2", n)
	}
}

// TestSQLiteWALNeverBlocksAReader: in WAL a reader gets in beside a
// writer, and a writer commits beside a reader's open transaction.
func TestSQLiteWALNeverBlocksAReader(t *testing.T) {
	db := fresh(t, "_pragma=journal_mode(WAL)&_pragma=busy_timeout(5000)")
	a, b := worker(t, db, &waits{t: t}), worker(t, db, &waits{t: t})
	if mode := mustQueryText(t, b, "PRAGMA journal_mode"); mode != "wal" {
		t.Fatalf("journal_mode %q, want wal", mode)
	}
	tx := begin(t, a)
	mustExec(t, a, `INSERT INTO t VALUES (2)`)
	if n := mustCount(t, b, `SELECT count(*) FROM t`); n != 1 {
		t.Fatalf("the reader sees %d rows, want the committed 1", n)
	}
	rtx := begin(t, b)
	if n := mustCount(t, b, `SELECT count(*) FROM t`); n != 1 {
		t.Fatalf("the reader's transaction sees %d rows, want 1", n)
	}
	if err := tx.Commit(); err != nil {
		t.Fatalf("the writer's commit beside a reader: %v", err)
	}
	if n := mustCount(t, b, `SELECT count(*) FROM t`); n != 1 {
		t.Fatalf("the reader's snapshot moved: %d rows", n)
	}
	if err := rtx.Rollback(); err != nil {
		t.Fatal(err)
	}
	if n := mustCount(t, b, `SELECT count(*) FROM t`); n != 2 {
		t.Fatalf("a new read sees %d rows, want 2", n)
	}
	if !exists(db.path+"-wal") || !exists(db.path+"-shm") {
		t.Errorf("no -wal and -shm beside %s", db.path)
	}
}

// TestSQLiteDeadlockAnswersBusyAtOnce: two deferred transactions that
// both read and then write: the second's write answers busy at once, its
// busy timeout notwithstanding, and no wait is asked (SQLite's deadlock
// rule: waiting could not help). In WAL, a write on a stale snapshot
// (SQLITE_BUSY_SNAPSHOT) likewise.
func TestSQLiteDeadlockAnswersBusyAtOnce(t *testing.T) {
	t.Run("rollback journal", func(t *testing.T) {
		db := fresh(t, "_pragma=busy_timeout(5000)")
		wa, wb := &waits{t: t}, &waits{t: t}
		a, b := worker(t, db, wa), worker(t, db, wb)
		txa, txb := begin(t, a), begin(t, b)
		mustCount(t, a, `SELECT count(*) FROM t`)
		mustCount(t, b, `SELECT count(*) FROM t`)
		mustExec(t, a, `INSERT INTO t VALUES (2)`)
		start := time.Now()
		wantBusy(t, db, execOn(b, `INSERT INTO t VALUES (3)`), start, "the second writer")
		if len(wb.got()) != 0 {
			t.Fatalf("the engine asked to wait in a deadlock: %v", wb.got())
		}
		if err := txb.Rollback(); err != nil {
			t.Fatal(err)
		}
		if err := txa.Commit(); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("WAL snapshot", func(t *testing.T) {
		db := fresh(t, "_journal_mode=WAL&_busy_timeout=5000")
		wa := &waits{t: t}
		a, b := worker(t, db, wa), worker(t, db, &waits{t: t})
		txa := begin(t, a)
		mustCount(t, a, `SELECT count(*) FROM t`)
		mustExec(t, b, `INSERT INTO t VALUES (2)`)
		start := time.Now()
		err := execOn(a, `INSERT INTO t VALUES (3)`)
		wantBusy(t, db, err, start, "a write on a stale snapshot")
		if !strings.Contains(err.Error(), "517") && !strings.Contains(strings.ToLower(err.Error()), "snapshot") {
			t.Errorf("want SQLITE_BUSY_SNAPSHOT, got %v", err)
		}
		if len(wa.got()) != 0 {
			t.Fatalf("the engine asked to wait on a stale snapshot: %v", wa.got())
		}
		txa.Rollback()
	})
}

// blocked runs q on c on its own goroutine and returns the wait it asks
// for, and a function that answers it and returns q's error.
func blocked(t *testing.T, c driver.Conn, w *waits, q string) (time.Duration, func(bool) error) {
	t.Helper()
	asked, answer, done := make(chan time.Duration), make(chan bool), make(chan error, 1)
	w.answer = func(d time.Duration) bool {
		asked <- d
		return <-answer
	}
	go func() { done <- execOn(c, q) }()
	select {
	case d := <-asked:
		return d, func(ok bool) error {
			answer <- ok
			return <-done
		}
	case err := <-done:
		t.Fatalf("%s did not wait: %v", q, err)
	case <-time.After(10 * time.Second):
		t.Fatalf("%s neither waited nor returned", q)
	}
	return 0, nil
}

// TestSQLiteAWaitIsTheHarnesss: with busy_timeout(5000), a writer that
// meets another's write lock asks to wait with 5s; true tries again and
// succeeds once the other has committed; false gives the busy error at
// once.
func TestSQLiteAWaitIsTheHarnesss(t *testing.T) {
	db := fresh(t, "_pragma=busy_timeout(5000)")
	wb := &waits{t: t}
	a, b := worker(t, db, &waits{t: t}), worker(t, db, wb)

	txa := begin(t, a)
	mustExec(t, a, `INSERT INTO t VALUES (2)`)
	d, answer := blocked(t, b, wb, `INSERT INTO t VALUES (3)`)
	if d != 5*time.Second {
		t.Fatalf("wait got %v, want the declared 5s", d)
	}
	if err := txa.Commit(); err != nil {
		t.Fatalf("the holder's commit while the other waits: %v", err)
	}
	if err := answer(true); err != nil {
		t.Fatalf("tried again after the commit: %v", err)
	}
	if n := mustCount(t, a, `SELECT count(*) FROM t`); n != 3 {
		t.Fatalf("%d rows, want 3", n)
	}

	txa = begin(t, a)
	mustExec(t, a, `INSERT INTO t VALUES (4)`)
	_, answer = blocked(t, b, wb, `INSERT INTO t VALUES (5)`)
	start := time.Now()
	wantBusy(t, db, answer(false), start, "a wait given up")
	if err := txa.Commit(); err != nil {
		t.Fatal(err)
	}
	if n := mustCount(t, b, `SELECT count(*) FROM t`); n != 4 {
		t.Fatalf("%d rows, want 4 (the given-up insert not applied)", n)
	}
}

// TestSQLiteNoBusyTimeoutNeverWaits: with busy_timeout 0 (the default, or
// set by the connection), a writer meeting a lock answers busy at once and
// wait is never called; so does a connection opened by Open, whatever the
// declared timeout.
func TestSQLiteNoBusyTimeoutNeverWaits(t *testing.T) {
	for _, params := range []string{"", "_busy_timeout=0"} {
		db := fresh(t, params)
		a, b := worker(t, db, &waits{t: t}), worker(t, db, &waits{t: t})
		txa := begin(t, a)
		mustExec(t, a, `INSERT INTO t VALUES (2)`)
		wantBusy(t, db, execOn(b, `INSERT INTO t VALUES (3)`), time.Now(), fmt.Sprintf("params %q", params))
		txa.Rollback()
	}

	db := fresh(t, "_pragma=busy_timeout(5000)")
	a, b := worker(t, db, &waits{t: t}), worker(t, db, &waits{t: t})
	mustExec(t, b, `PRAGMA busy_timeout = 0`)
	txa := begin(t, a)
	mustExec(t, a, `INSERT INTO t VALUES (2)`)
	wantBusy(t, db, execOn(b, `INSERT INTO t VALUES (3)`), time.Now(), "after PRAGMA busy_timeout = 0")

	plain, err := db.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	if n := mustCount(t, plain, "PRAGMA busy_timeout"); n != 5000 {
		t.Fatalf("Open's connection has busy_timeout %d, want the declared 5000", n)
	}
	start := time.Now()
	wantBusy(t, db, execOn(plain, `INSERT INTO t VALUES (4)`), start, "Open's connection")
	txa.Rollback()
}

// TestSQLitePragmaBusyTimeoutChangesTheWait: a PRAGMA busy_timeout the
// connection runs changes the timeout wait gets, and never puts SQLite's
// sleeping handler in the harness's place: alone, prepared and never run,
// or first in a script whose next statement meets the lock.
func TestSQLitePragmaBusyTimeoutChangesTheWait(t *testing.T) {
	db := fresh(t, "_pragma=busy_timeout(5000)")
	wb := &waits{t: t}
	a, b := worker(t, db, &waits{t: t}), worker(t, db, wb)
	txa := begin(t, a)
	mustExec(t, a, `INSERT INTO t VALUES (2)`)
	defer txa.Rollback()

	giveUp := func(want time.Duration, q string) {
		t.Helper()
		d, answer := blocked(t, b, wb, q)
		if d != want {
			t.Errorf("%s: wait got %v, want %v", q, d, want)
		}
		start := time.Now()
		wantBusy(t, db, answer(false), start, q)
	}

	mustExec(t, b, `PRAGMA busy_timeout = 4321`)
	giveUp(4321*time.Millisecond, `INSERT INTO t VALUES (3)`)

	st, err := b.(driver.ConnPrepareContext).PrepareContext(context.Background(), `PRAGMA busy_timeout = 3888`)
	if err != nil {
		t.Fatal(err)
	}
	st.Close()
	giveUp(3888*time.Millisecond, `INSERT INTO t VALUES (4)`)

	giveUp(3777*time.Millisecond, `PRAGMA busy_timeout = 3777; INSERT INTO t VALUES (5)`)
	if n := mustCount(t, b, "PRAGMA busy_timeout"); n != 3777 {
		t.Errorf("PRAGMA busy_timeout reads %d, want 3777", n)
	}

	// A wait while compiling: a new connection reads the schema when it
	// prepares its first statement, which an EXCLUSIVE lock shuts out.
	db = fresh(t, "")
	wc := &waits{t: t}
	a, c := worker(t, db, &waits{t: t}), worker(t, db, wc)
	st, err = c.(driver.ConnPrepareContext).PrepareContext(context.Background(), `PRAGMA busy_timeout = 3555`)
	if err != nil {
		t.Fatal(err)
	}
	st.Close()
	mustExec(t, a, `BEGIN EXCLUSIVE`)
	defer execOn(a, `ROLLBACK`)
	d, answer := blocked(t, c, wc, `SELECT count(*) FROM t`)
	if d != 3555*time.Millisecond {
		t.Errorf("a wait while compiling got %v, want 3.555s", d)
	}
	start := time.Now()
	wantBusy(t, db, answer(false), start, "a wait while compiling")
}

// TestSQLiteTxlockImmediateLocksAtBegin: _txlock=immediate takes the
// write lock at BEGIN, where a deferred BEGIN takes none.
func TestSQLiteTxlockImmediateLocksAtBegin(t *testing.T) {
	db := fresh(t, "_txlock=immediate")
	a, b := worker(t, db, &waits{t: t}), worker(t, db, &waits{t: t})
	txa := begin(t, a)
	_, err := b.(driver.ConnBeginTx).BeginTx(context.Background(), driver.TxOptions{})
	wantBusy(t, db, err, time.Now(), "a second BEGIN IMMEDIATE")
	txa.Rollback()

	db = fresh(t, "")
	a, b = worker(t, db, &waits{t: t}), worker(t, db, &waits{t: t})
	txa, txb := begin(t, a), begin(t, b)
	txa.Rollback()
	txb.Rollback()
}

// TestSQLiteCloseRemovesTheFiles: the database and the engine's files
// beside it are gone after Close, in both journal modes.
func TestSQLiteCloseRemovesTheFiles(t *testing.T) {
	for _, params := range []string{"", "_pragma=journal_mode(WAL)"} {
		db, err := SQLite{Params: params}.Fresh(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		d := db.(*sqliteDB)
		c, err := db.Open()
		if err != nil {
			t.Fatal(err)
		}
		mustExec(t, c, `CREATE TABLE t (x)`)
		tx := begin(t, c)
		mustExec(t, c, `INSERT INTO t VALUES (1)`)
		var files []string
		for _, suffix := range []string{"", "-journal", "-wal", "-shm"} {
			if exists(d.path + suffix) {
				files = append(files, d.path+suffix)
			}
		}
		if len(files) < 2 {
			t.Fatalf("params %q: want the database and its journal or WAL on disk mid-transaction, found %v", params, files)
		}
		tx.Rollback()
		c.Close()
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			if exists(f) {
				t.Errorf("params %q: %s left after Close", params, f)
			}
		}
	}
}

// TestSQLiteSweepsWhatDeadProcessesLeft: a database file (and its
// journal) whose maker's pid is gone is removed; one of a live process, or
// another file, stays.
func TestSQLiteSweepsWhatDeadProcessesLeft(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	dead := cmd.Process.Pid
	if processAlive(dead) {
		t.Skipf("pid %d was reused at once", dead)
	}
	dir := t.TempDir()
	name := func(pid int, suffix string) string {
		return filepath.Join(dir, fmt.Sprintf("%s%d-7.db%s", dbFilePrefix, pid, suffix))
	}
	gone := []string{name(dead, ""), name(dead, "-journal"), name(dead, "-wal"), name(dead, "-shm")}
	kept := []string{name(os.Getpid(), ""), name(os.Getppid(), "-journal"), filepath.Join(dir, "idemcheck-other-1-1.db"), name(dead, ".bak")}
	for _, f := range append(slices.Clone(gone), kept...) {
		if err := os.WriteFile(f, nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	sweep(dir)
	for _, f := range gone {
		if exists(f) {
			t.Errorf("%s of a dead process was not swept", filepath.Base(f))
		}
	}
	for _, f := range kept {
		if !exists(f) {
			t.Errorf("%s was swept", filepath.Base(f))
		}
	}
}

// TestSQLiteParams: the team's settings are validated, and an error names
// the parameter it refuses.
func TestSQLiteParams(t *testing.T) {
	good := []struct {
		params string
		busy   time.Duration
		begin  string
	}{
		{"", 0, "BEGIN"},
		{"_pragma=journal_mode(WAL)&_pragma=busy_timeout(5000)&_txlock=immediate&_pragma=foreign_keys(1)", 5 * time.Second, "BEGIN IMMEDIATE"},
		{"?_busy_timeout=250&_txlock=EXCLUSIVE", 250 * time.Millisecond, "BEGIN EXCLUSIVE"},
		{"_busy_timeout=1&_timeout=2", 2 * time.Millisecond, "BEGIN"},
		{"_timeout=2&_pragma=busy_timeout = 3", 3 * time.Millisecond, "BEGIN"},
		{"_txlock=deferred&_fk=1&_journal=TRUNCATE&_sync=NORMAL&cache=private&_time_format=sqlite", 0, "BEGIN DEFERRED"},
	}
	for _, g := range good {
		p, err := parseSQLiteParams(g.params)
		if err != nil {
			t.Errorf("%q: %v", g.params, err)
			continue
		}
		if p.busy != g.busy || p.begin != g.begin {
			t.Errorf("%q: busy %v, begin %q; want %v, %q", g.params, p.busy, p.begin, g.busy, g.begin)
		}
		if strings.Contains(p.open, "busy_timeout") || strings.Contains(p.open, "_timeout") {
			t.Errorf("%q: the connections would open with the busy timeout: %s", g.params, p.open)
		}
	}
	bad := []struct{ params, names string }{
		{"/tmp/x.db?_txlock=immediate", "database name"},
		{"file:x.db", "database name"},
		{"vfs=memdb", "vfs"},
		{"mode=memory", "mode"},
		{"nolock=1", "nolock"},
		{"immutable=1", "immutable"},
		{"modeof=/etc/passwd", "modeof"},
		{"cache=shared", "cache=shared"},
		{"_txlok=immediate", `"_txlok"`},
		{"_txlock=later", "_txlock=later"},
		{"_pragma=jounral_mode(WAL)", "jounral_mode"},
		{"_pragma=foreign_keys(1);ATTACH 'x.db' AS x", "_pragma=foreign_keys(1);ATTACH"},
		{"_pragma=locking_mode(EXCLUSIVE)", "locking_mode"},
		{"_pragma=journal_mode(FAST)", "journal_mode(FAST)"},
		{"_pragma=busy_timeout(soon)", "busy_timeout"},
		{"_busy_timeout=soon", "_busy_timeout"},
		{"_journal_mode=FAST", "_journal_mode"},
		{"_time_format=nope", "_time_format"},
	}
	for _, b := range bad {
		_, err := parseSQLiteParams(b.params)
		if err == nil || !strings.Contains(err.Error(), b.names) {
			t.Errorf("%q: want an error naming %s, got %v", b.params, b.names, err)
		}
		if _, ferr := (SQLite{Params: b.params}).Fresh(context.Background()); ferr == nil {
			t.Errorf("%q: Fresh accepted it", b.params)
		}
		if _, serr := (SQLiteReuse{Params: b.params}).Start(context.Background()); serr == nil {
			t.Errorf("%q: Start accepted it", b.params)
		}
	}
}

// TestSQLiteIsBusyRecognisesExtendedCodes: SQLITE_BUSY and SQLITE_LOCKED
// with their extended codes, and nothing else.
func TestSQLiteIsBusyRecognisesExtendedCodes(t *testing.T) {
	db := fresh(t, "")
	if db.IsBusy(errors.New("database is locked")) || db.IsBusy(io.EOF) || db.IsBusy(nil) {
		t.Error("IsBusy took an error not of the driver for busy")
	}
	c := worker(t, db, &waits{t: t})
	if err := execOn(c, `INSERT INTO nowhere VALUES (1)`); err == nil || db.IsBusy(err) {
		t.Errorf("a missing table is not busy: %v", err)
	}
}
