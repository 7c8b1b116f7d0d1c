package sqlhook_test

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"modernc.org/sqlite"

	"github.com/idemcheck/idemcheck/internal/consumerharness/sqlhook"
)

var dbSeq atomic.Int64

// recorder is a hook that records every call and can fail one.
type recorder struct {
	calls  []string
	failOn sqlhook.Op
	busy   []string
}

func (r *recorder) Before(c sqlhook.Call) error {
	r.calls = append(r.calls, c.String())
	if c.Op == r.failOn {
		return errors.New("injected")
	}
	return nil
}

func (r *recorder) Busy(c sqlhook.Call, err error) error {
	r.busy = append(r.busy, c.String())
	return err // give up at once
}

func isBusy(err error) bool {
	var se *sqlite.Error
	return errors.As(err, &se) && se.Code()&0xff == 5
}

func open(t *testing.T) (dsn string, admin *sql.DB) {
	t.Helper()
	dsn = fmt.Sprintf("file:/sqlhook-test-%d?vfs=memdb&_txlock=immediate", dbSeq.Add(1))
	admin, err := sql.Open("sqlite", dsn)
	if err != nil {
		t.Fatal(err)
	}
	admin.SetMaxOpenConns(1)
	t.Cleanup(func() { admin.Close() })
	if _, err := admin.Exec(`CREATE TABLE t (id TEXT PRIMARY KEY)`); err != nil {
		t.Fatal(err)
	}
	return dsn, admin
}

func hooked(dsn string, h sqlhook.Hook) (*sqlhook.Connector, *sql.DB) {
	c := sqlhook.NewConnector(func() (driver.Conn, error) { return (&sqlite.Driver{}).Open(dsn) }, h, isBusy)
	return c, sql.OpenDB(c)
}

func TestEveryCallIsReportedInOrder(t *testing.T) {
	dsn, _ := open(t)
	rec := &recorder{}
	_, db := hooked(dsn, rec)
	defer db.Close()
	ctx := context.Background()
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO t VALUES (?)`, "a"); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM t`).Scan(&n); err != nil || n != 1 {
		t.Fatalf("count %d, %v", n, err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	want := "begin|exec INSERT INTO t VALUES (?) [a]|query SELECT count(*) FROM t|rows end SELECT count(*) FROM t|commit"
	if got := strings.Join(rec.calls, "|"); got != want {
		t.Fatalf("calls\n%s\nwant\n%s", got, want)
	}
}

func TestBeforeCanFailACall(t *testing.T) {
	dsn, admin := open(t)
	_, db := hooked(dsn, &recorder{failOn: sqlhook.Exec})
	defer db.Close()
	if _, err := db.Exec(`INSERT INTO t VALUES ('a')`); err == nil || err.Error() != "injected" {
		t.Fatalf("got %v, want the injected error", err)
	}
	var n int
	if err := admin.QueryRow(`SELECT count(*) FROM t`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("the failed call reached the database: %d rows, %v", n, err)
	}
}

func TestKillRollsBackAndEndsTheConnections(t *testing.T) {
	dsn, admin := open(t)
	c, db := hooked(dsn, &recorder{})
	ctx := context.Background()
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO t VALUES ('a')`); err != nil {
		t.Fatal(err)
	}
	if open, last := c.InTx(); !open || !strings.Contains(last, "INSERT") {
		t.Fatalf("InTx = %v, %q", open, last)
	}
	c.Kill()
	if open, _ := c.InTx(); open {
		t.Fatal("a killed connector still reports a transaction")
	}
	var n int
	if err := admin.QueryRow(`SELECT count(*) FROM t`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("after Kill: %d rows, %v; want the insert rolled back", n, err)
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO t VALUES ('b')`); !errors.Is(err, sqlhook.ErrKilled) {
		t.Fatalf("a call after Kill: %v, want ErrKilled", err)
	}
	_ = tx.Rollback()
	db.Close()
}

func TestALockConflictGoesToBusy(t *testing.T) {
	dsn, _ := open(t)
	_, a := hooked(dsn, &recorder{})
	defer a.Close()
	rec := &recorder{}
	_, b := hooked(dsn, rec)
	defer b.Close()
	ctx := context.Background()
	tx, err := a.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	if _, err := b.BeginTx(ctx, nil); !isBusy(err) {
		t.Fatalf("second writer: %v, want SQLITE_BUSY once Busy gave up", err)
	}
	if len(rec.busy) != 1 || rec.busy[0] != "begin" {
		t.Fatalf("Busy saw %v, want [begin]", rec.busy)
	}
}

// upper is a Rewriter that runs every statement's "t" as "T" (the same
// table: SQLite's names are not case sensitive) and notes an argument
// "x".
type upper struct{ seen []string }

func (u *upper) Rewrite(q string) (string, []string) {
	u.seen = append(u.seen, q)
	if strings.Contains(q, "FROM t") {
		return strings.ReplaceAll(q, "FROM t", "FROM T"), []string{"rewritten"}
	}
	return q, nil
}

func (u *upper) ArgNotes(args []driver.NamedValue) []string {
	for _, a := range args {
		if a.Value == "x" {
			return []string{"an x"}
		}
	}
	return nil
}

// noted records each call's SQL and notes.
type noted struct{ calls []string }

func (n *noted) Before(c sqlhook.Call) error {
	n.calls = append(n.calls, fmt.Sprintf("%s %v", c, c.Notes))
	return nil
}
func (n *noted) Busy(_ sqlhook.Call, err error) error { return err }

func TestARewriterChangesWhatRunsNotWhatIsReported(t *testing.T) {
	dsn, _ := open(t)
	h, rw := &noted{}, &upper{}
	c := sqlhook.NewConnector(func() (driver.Conn, error) { return (&sqlite.Driver{}).Open(dsn) }, h, isBusy, sqlhook.WithRewriter(rw))
	db := sql.OpenDB(c)
	defer db.Close()
	ctx := context.Background()
	if _, err := db.ExecContext(ctx, `INSERT INTO t VALUES (?)`, "x"); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM t WHERE id = ?`, "x").Scan(&n); err != nil || n != 1 {
		t.Fatalf("count %d, %v", n, err)
	}
	st, err := db.PrepareContext(ctx, `SELECT count(*) FROM t`)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.QueryRowContext(ctx).Scan(&n); err != nil || n != 1 {
		t.Fatalf("count %d, %v", n, err)
	}
	want := "exec INSERT INTO t VALUES (?) [x] [an x]|query SELECT count(*) FROM t WHERE id = ? [x] [rewritten an x]|rows end SELECT count(*) FROM t WHERE id = ? []|" +
		"query SELECT count(*) FROM t [rewritten]|rows end SELECT count(*) FROM t []"
	if got := strings.Join(h.calls, "|"); got != want {
		t.Fatalf("calls\n%s\nwant\n%s", got, want)
	}
	if len(rw.seen) != 3 {
		t.Fatalf("rewritten %q", rw.seen)
	}
}

// observer records what every call returned.
type observer struct {
	recorder
	returned []string
}

func (o *observer) Returned(c sqlhook.Call, res driver.Result, err error) {
	s := string(c.Op)
	if res != nil {
		n, _ := res.RowsAffected()
		s += fmt.Sprintf(" affected %d", n)
	}
	if err != nil {
		s += " error " + err.Error()
	}
	o.returned = append(o.returned, s)
}

func (o *observer) Row(c sqlhook.Call, dest []driver.Value) {
	o.returned = append(o.returned, fmt.Sprintf("row %v", dest))
}

// TestAnObserverSeesWhatEveryCallReturned: an Observer hook is told each
// call's result or error (an injected one too) and each row a query gave.
func TestAnObserverSeesWhatEveryCallReturned(t *testing.T) {
	dsn, _ := open(t)
	o := &observer{recorder: recorder{failOn: sqlhook.Rollback}}
	_, db := hooked(dsn, o)
	defer db.Close()
	ctx := context.Background()
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO t VALUES (?), (?)`, "a", "b"); err != nil {
		t.Fatal(err)
	}
	rows, err := tx.QueryContext(ctx, `SELECT id FROM t ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
	}
	rows.Close()
	_ = tx.Rollback()
	want := "begin|exec affected 2|query|row [a]|row [b]|rows end|rollback error injected"
	if got := strings.Join(o.returned, "|"); got != want {
		t.Fatalf("returned\n%s\nwant\n%s", got, want)
	}
}

// rowsRecorder is a RowsReporter and an Observer.
type rowsRecorder struct {
	recorder
	rows   map[uint64]int
	closed []string
}

func (r *rowsRecorder) Returned(sqlhook.Call, driver.Result, error) {}
func (r *rowsRecorder) Row(c sqlhook.Call, _ []driver.Value) {
	if r.rows == nil {
		r.rows = map[uint64]int{}
	}
	r.rows[c.Seq]++
}
func (r *rowsRecorder) RowsClosed(c sqlhook.Call, read, more int) {
	r.closed = append(r.closed, fmt.Sprintf("%s: %d read (told %d), %d more", c.SQL, read, r.rows[c.Seq], more))
}

// A caller that closes its rows early is told nothing of the rows it did
// not read, and the reporter learns how many there were.
func TestRowsClosedCountsWhatTheCallerDidNotRead(t *testing.T) {
	dsn, admin := open(t)
	for _, id := range []string{"a", "b", "c"} {
		if _, err := admin.Exec(`INSERT INTO t VALUES (?)`, id); err != nil {
			t.Fatal(err)
		}
	}
	rec := &rowsRecorder{}
	_, db := hooked(dsn, rec)
	defer db.Close()
	var id string
	if err := db.QueryRow(`SELECT id FROM t ORDER BY id`).Scan(&id); err != nil || id != "a" {
		t.Fatalf("first row %q, %v", id, err)
	}
	rows, err := db.Query(`SELECT id FROM t WHERE id > ?`, "a")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for rows.Next() {
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		got = append(got, id)
	}
	if err := rows.Err(); err != nil || strings.Join(got, ",") != "b,c" {
		t.Fatalf("rows %v, %v", got, err)
	}
	rows.Close()
	var n int
	if err := db.QueryRow(`SELECT count(*) FROM t WHERE id = 'z'`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("count %d, %v", n, err)
	}
	want := []string{
		"SELECT id FROM t ORDER BY id: 1 read (told 1), 2 more",
		"SELECT id FROM t WHERE id > ?: 2 read (told 2), 0 more",
		"SELECT count(*) FROM t WHERE id = 'z': 1 read (told 1), 0 more",
	}
	if strings.Join(rec.closed, "\n") != strings.Join(want, "\n") {
		t.Fatalf("rows closed:\n%s\nwant:\n%s", strings.Join(rec.closed, "\n"), strings.Join(want, "\n"))
	}
}
