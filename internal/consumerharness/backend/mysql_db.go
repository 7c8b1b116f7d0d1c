package backend

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/idemcheck/idemcheck/internal/sqlscan"
)

// The server's error numbers the backend reads.
const (
	// myLockWaitTimeout (ER_LOCK_WAIT_TIMEOUT): a row, gap or metadata
	// lock another connection holds; only the statement is rolled back.
	myLockWaitTimeout = 1205
	// myDeadlock (ER_LOCK_DEADLOCK): the server's deadlock detector
	// rolled the transaction back (see serverDeadlock).
	myDeadlock = 1213
)

// myDB is one scenario's database: the run's, reset or made anew.
type myDB struct {
	s     *mySession
	mu    sync.Mutex
	conns []*myConn
	clock func() time.Time
}

var (
	_ Database = (*myDB)(nil)
	_ Clocked  = (*myDB)(nil)
	_ Preparer = (*myDB)(nil)
)

// SetClock implements Clocked.
func (d *myDB) SetClock(now func() time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.clock = now
}

// now is the scenario's time.
func (d *myDB) now() time.Time {
	d.mu.Lock()
	f := d.clock
	d.mu.Unlock()
	if f == nil {
		return Epoch
	}
	return f()
}

var sysdateRE = regexp.MustCompile(`(?i)\bsysdate\b`)

// Rewrite implements Clocked: SYSDATE() reads the machine's clock, where
// NOW() reads the session's timestamp; it becomes NOW() where the
// project's scanner reads the statement as MySQL does (no backslash
// escapes, # comments or $ in names), and is named otherwise.
func (d *myDB) Rewrite(query string) (string, []string) {
	if !sysdateRE.MatchString(query) {
		return query, nil
	}
	if strings.ContainsAny(query, "\\#$") {
		return query, []string{"SYSDATE(): MySQL reads it from the machine's clock, not from the session's timestamp"}
	}
	toks, complete := sqlscan.Lex(query)
	if !complete {
		return query, []string{"SYSDATE(): MySQL reads it from the machine's clock, not from the session's timestamp"}
	}
	var b strings.Builder
	for _, t := range toks {
		if t.Is("sysdate") {
			b.WriteString("NOW")
			continue
		}
		b.WriteString(t.Text)
	}
	return b.String(), nil
}

// ArgNotes implements Clocked: MySQL reads no parameter from the machine's
// clock.
func (d *myDB) ArgNotes([]driver.NamedValue) []string { return nil }

func (d *myDB) Admin() *sql.DB { return d.s.admin }

// Prepare implements Preparer.
func (d *myDB) Prepare(ctx context.Context, run func(*sql.DB) error) error {
	return d.s.prepare(ctx, run)
}

func (d *myDB) Open() (driver.Conn, error) {
	d.s.mu.Lock()
	closed := d.s.closed
	d.s.mu.Unlock()
	if closed {
		return nil, errors.New("mysql: the run is over")
	}
	raw, err := d.s.workers.Connect(context.Background())
	if err != nil {
		return nil, err
	}
	c := &myConn{db: d, raw: raw, at: Epoch}
	d.mu.Lock()
	d.conns = append(d.conns, c)
	d.mu.Unlock()
	return c, nil
}

// IsBusy recognises a lock wait answered at once (error 1205), but for
// one the statement asked for (see noWait).
func (d *myDB) IsBusy(err error) bool {
	var nw noWait
	return isMyLockWait(err) && !errors.As(err, &nw)
}

func isMyLockWait(err error) bool {
	var me *mysql.MySQLError
	return errors.As(err, &me) && me.Number == myLockWaitTimeout
}

var _ Deadlocker = (*myDB)(nil)

// DeadlockAnswer implements Deadlocker.
func (d *myDB) DeadlockAnswer() string {
	return "InnoDB answers error 1213 (ER_LOCK_DEADLOCK, SQLSTATE 40001) and rolls the transaction back"
}

// Deadlock answers a statement given up in a deadlock between workers as
// InnoDB's detector would: the transaction rolled back on the server,
// then error 1213. The workers run with innodb_lock_wait_timeout 0, so
// the server never sees the cycle itself: each wait was answered 1205 at
// once, and the waiter's transaction is still open until here. Should
// the ROLLBACK fail, the transaction's fate is not what 1213 says, and
// the statement keeps its 1205 (a lock wait timeout: the transaction
// open).
func (c *myConn) Deadlock(busy error) error {
	if _, err := c.raw.(driver.ExecerContext).ExecContext(context.Background(), "ROLLBACK", nil); err != nil {
		return busy
	}
	return serverDeadlock{&mysql.MySQLError{Number: myDeadlock, SQLState: [5]byte{'4', '0', '0', '0', '1'},
		Message: "Deadlock found when trying to get lock; try restarting transaction"}}
}

// Close closes the connections the scenario still holds.
func (d *myDB) Close() error {
	d.mu.Lock()
	conns := d.conns
	d.conns = nil
	d.mu.Unlock()
	for _, c := range conns {
		_ = c.Close()
	}
	return nil
}

// noWait is a lock wait the statement asked not to make (NOWAIT, WAIT
// n): its answer, not a wait for the scheduler.
type noWait struct{ err error }

func (e noWait) Error() string { return e.err.Error() }
func (e noWait) Unwrap() error { return e.err }

// myConn is a worker's connection: the driver's, with its clock set to
// the scenario's before each statement, its rows read in full (a lock
// wait is the query's error, never a row's), and its transaction rolled
// back before it closes.
type myConn struct {
	db     *myDB
	raw    driver.Conn
	at     time.Time
	closed bool
	mu     sync.Mutex
	// rawTx: a statement may have begun a transaction (see notesTx).
	rawTx bool
	// txOpen: BeginTx began a transaction not ended yet. Close rolls
	// back first when either may be open.
	txOpen bool
}

// mayBeginTx are the first words of statements that may leave a
// transaction open (BEGIN, START TRANSACTION, SET autocommit = 0, XA
// START, or several statements at once).
var mayBeginTx = map[string]bool{"begin": true, "start": true, "set": true, "xa": true}

// notesTx records that query may leave a transaction open.
func (c *myConn) notesTx(query string) {
	if c.rawTx {
		return
	}
	w := sqlscan.Significant(query)
	if len(w) > 0 && (w[0].Kind != sqlscan.Word || mayBeginTx[strings.ToLower(w[0].Text)]) {
		c.rawTx = true
	}
	for _, t := range w {
		if t.Kind == sqlscan.Semicolon {
			c.rawTx = true
		}
	}
}

// myTx ends a transaction BeginTx began.
type myTx struct {
	c   *myConn
	raw driver.Tx
}

func (t myTx) Commit() error   { return t.end(t.raw.Commit()) }
func (t myTx) Rollback() error { return t.end(t.raw.Rollback()) }

// end notes a transaction ended by err == nil; a statement since may
// have begun another (see notesTx), which Close still rolls back.
func (t myTx) end(err error) error {
	if err == nil {
		t.c.txOpen = false
	}
	return err
}

var (
	_ driver.Conn               = (*myConn)(nil)
	_ driver.ConnBeginTx        = (*myConn)(nil)
	_ driver.ExecerContext      = (*myConn)(nil)
	_ driver.QueryerContext     = (*myConn)(nil)
	_ driver.ConnPrepareContext = (*myConn)(nil)
	_ driver.NamedValueChecker  = (*myConn)(nil)
	_ driver.Validator          = (*myConn)(nil)
)

// Close rolls the connection's transaction back, synchronously, and
// closes it.
func (c *myConn) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil
	}
	c.closed = true
	c.db.mu.Lock()
	for i, o := range c.db.conns {
		if o == c {
			c.db.conns = append(c.db.conns[:i], c.db.conns[i+1:]...)
			break
		}
	}
	c.db.mu.Unlock()
	if ex, ok := c.raw.(driver.ExecerContext); ok && (c.txOpen || c.rawTx) {
		_, _ = ex.ExecContext(context.Background(), "ROLLBACK", nil)
	}
	return c.raw.Close()
}

// syncClock sets the session's timestamp to the scenario's time when it
// has moved.
func (c *myConn) syncClock() error {
	now := c.db.now()
	if now.Equal(c.at) {
		return nil
	}
	if _, err := c.raw.(driver.ExecerContext).ExecContext(context.Background(), "SET timestamp = "+myTime(now), nil); err != nil {
		return err
	}
	c.at = now
	return nil
}

// before readies a statement: the clock, and a note of DDL.
func (c *myConn) before(query string) error {
	c.db.s.note(query)
	c.notesTx(query)
	return c.syncClock()
}

// answer is err as the harness reads it: a lock wait the statement asked
// not to make is its answer.
func answer(query string, err error) error {
	var me *mysql.MySQLError
	switch {
	case isMyLockWait(err) && asksNoWait(query):
		return noWait{err}
	case errors.As(err, &me) && me.Number == myDeadlock:
		return serverDeadlock{err}
	}
	return err
}

// serverDeadlock is the server's answer to a deadlock its own detector
// found (error 1213): it rolled the whole transaction back, and it is the
// consumer's to run it again, as on any server; the trace says so. The
// driver's error stays reachable (errors.As).
type serverDeadlock struct{ err error }

func (e serverDeadlock) Error() string {
	return e.err.Error() + " (the server's deadlock detector rolled the transaction back: a transient error the consumer must retry)"
}

func (e serverDeadlock) Unwrap() error { return e.err }

// asksNoWait reports whether query says NOWAIT or WAIT n.
func asksNoWait(query string) bool {
	w := sqlscan.Significant(query)
	for i, t := range w {
		if t.Is("nowait") || (t.Is("wait") && i+1 < len(w) && w[i+1].Kind == sqlscan.Number) {
			return true
		}
	}
	return false
}

func (c *myConn) Prepare(query string) (driver.Stmt, error) {
	return c.PrepareContext(context.Background(), query)
}

// PrepareContext returns a statement that runs query through the
// connection.
func (c *myConn) PrepareContext(_ context.Context, query string) (driver.Stmt, error) {
	return &connStmt{c: c, query: query}, nil
}

func (c *myConn) Begin() (driver.Tx, error) {
	return c.BeginTx(context.Background(), driver.TxOptions{})
}

// BeginTx begins a transaction on the scenario's clock. The driver is
// called without the caller's context: its cancellation would run on a
// goroutine of the driver's outside the scenario; the harness ends a call
// whose context ended itself.
func (c *myConn) BeginTx(_ context.Context, opts driver.TxOptions) (driver.Tx, error) {
	if err := c.syncClock(); err != nil {
		return nil, err
	}
	c.txOpen = true
	tx, err := c.raw.(driver.ConnBeginTx).BeginTx(context.Background(), opts)
	if err != nil {
		return nil, err
	}
	return myTx{c: c, raw: tx}, nil
}

func (c *myConn) CheckNamedValue(nv *driver.NamedValue) error {
	return c.raw.(driver.NamedValueChecker).CheckNamedValue(nv)
}

func (c *myConn) IsValid() bool {
	v, ok := c.raw.(driver.Validator)
	return !ok || v.IsValid()
}

func (c *myConn) ExecContext(_ context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	if err := c.before(query); err != nil {
		return nil, err
	}
	ctx := context.Background()
	res, err := c.raw.(driver.ExecerContext).ExecContext(ctx, query, args)
	if errors.Is(err, driver.ErrSkip) {
		// The driver prepares statements with parameters (no
		// interpolateParams).
		var st driver.Stmt
		st, err = c.raw.(driver.ConnPrepareContext).PrepareContext(ctx, query)
		if err == nil {
			res, err = st.(driver.StmtExecContext).ExecContext(ctx, args)
			_ = st.Close()
		}
	}
	return res, answer(query, err)
}

func (c *myConn) QueryContext(_ context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	if err := c.before(query); err != nil {
		return nil, err
	}
	ctx := context.Background()
	rows, err := c.raw.(driver.QueryerContext).QueryContext(ctx, query, args)
	var st driver.Stmt
	if errors.Is(err, driver.ErrSkip) {
		st, err = c.raw.(driver.ConnPrepareContext).PrepareContext(ctx, query)
		if err == nil {
			rows, err = st.(driver.StmtQueryContext).QueryContext(ctx, args)
		}
	}
	var buf *bufRows
	if err == nil {
		buf, err = readAll(rows)
	}
	if st != nil {
		_ = st.Close()
	}
	if err != nil {
		return nil, answer(query, err)
	}
	return buf, nil
}

var _ Describer = (*myDB)(nil)

// Describe implements Describer from information_schema. Rows are ordered
// by every column's bytes, then by the column itself: a case-insensitive
// collation ties 'a' and 'A', and a tie would leave the order to the
// server's plan. AUTO_INCREMENT counters are read with SHOW CREATE TABLE,
// which reads the live counter (MySQL 8's information_schema.TABLES may
// answer a cached one); an InnoDB counter does not go back when an insert
// rolls back, so the next row's id is part of the state. Snapshot: the
// isolation is REPEATABLE READ unless the team's DSN says otherwise, and
// a READ COMMITTED read treated as one only costs the search some
// reduction.
func (d *myDB) Describe(ctx context.Context) (Description, error) {
	// The columns' catalog costs the server milliseconds a read (it opens
	// every table's definition), where the stamp below costs about what a
	// SELECT 1 does: a description is read again only when the stamp
	// changed, or when a table was made or altered in the last seconds,
	// whose CREATE_TIME (to the second) would not tell a second change
	// within the same second.
	var stamp string
	var recent bool
	stamped := d.s.admin.QueryRowContext(ctx, myCatalogStamp).Scan(&stamp, &recent) == nil && !recent
	if stamped {
		d.s.descMu.Lock()
		desc, ok := d.s.desc, d.s.descStamp == stamp && d.s.desc.Queries != nil
		d.s.descMu.Unlock()
		if ok {
			return Description{Tables: slices.Clone(desc.Tables), Queries: slices.Clone(desc.Queries), Snapshot: desc.Snapshot}, nil
		}
	}
	desc, err := d.describe(ctx)
	if err == nil && stamped {
		d.s.descMu.Lock()
		d.s.desc, d.s.descStamp = desc, stamp
		d.s.descMu.Unlock()
		desc = Description{Tables: slices.Clone(desc.Tables), Queries: slices.Clone(desc.Queries), Snapshot: desc.Snapshot}
	}
	return desc, err
}

// myCatalogStamp names the catalog of the scenarios' database: each
// table, its kind and when it was made or last altered (to the second),
// and whether that was in the last two seconds by the server's own clock
// (SYSDATE: the sessions' timestamp is the scenario's).
const myCatalogStamp = `SELECT COALESCE(GROUP_CONCAT(TABLE_NAME, ' ', TABLE_TYPE, ' ', COALESCE(CREATE_TIME, '') ORDER BY CAST(TABLE_NAME AS BINARY) SEPARATOR '\n'), ''),
  COALESCE(MAX(CREATE_TIME) >= SYSDATE() - INTERVAL 2 SECOND, 0) <> 0
FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE()`

// describe reads the catalog's columns.
func (d *myDB) describe(ctx context.Context) (Description, error) {
	rows, err := d.s.admin.QueryContext(ctx, `SELECT c.TABLE_NAME, c.COLUMN_NAME, c.EXTRA FROM information_schema.COLUMNS c
JOIN information_schema.TABLES t ON t.TABLE_SCHEMA = c.TABLE_SCHEMA AND t.TABLE_NAME = c.TABLE_NAME
WHERE c.TABLE_SCHEMA = DATABASE() AND t.TABLE_TYPE = 'BASE TABLE'
ORDER BY CAST(c.TABLE_NAME AS BINARY), c.ORDINAL_POSITION`)
	if err != nil {
		return Description{}, err
	}
	defer rows.Close()
	type table struct {
		name    string
		order   []string
		autoInc bool
	}
	var tables []*table
	for rows.Next() {
		var name, col, extra string
		if err := rows.Scan(&name, &col, &extra); err != nil {
			return Description{}, err
		}
		if len(tables) == 0 || tables[len(tables)-1].name != name {
			tables = append(tables, &table{name: name})
		}
		t := tables[len(tables)-1]
		t.order = append(t.order, "CAST("+myIdent(col)+" AS BINARY)", myIdent(col))
		t.autoInc = t.autoInc || strings.Contains(strings.ToLower(extra), "auto_increment")
	}
	if err := rows.Err(); err != nil {
		return Description{}, err
	}
	desc := Description{Snapshot: true}
	for _, t := range tables {
		desc.Tables = append(desc.Tables, strings.ToLower(t.name))
		desc.Queries = append(desc.Queries, "SELECT * FROM "+myIdent(t.name)+" ORDER BY "+strings.Join(t.order, ", "))
		if t.autoInc {
			desc.Queries = append(desc.Queries, "SHOW CREATE TABLE "+myIdent(t.name))
		}
	}
	return desc, nil
}
