package backend

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"modernc.org/sqlite"

	"github.com/idemcheck/idemcheck/internal/consumerharness/sqlclock"
)

// SQLite is the embedded backend: every scenario gets a database of its
// own, a real file on a RAM-backed directory (/dev/shm when it exists and
// is writable, else the system's temporary directory), shared by the
// connections of every worker and the harness's admin handle, and removed
// with the engine's -journal, -wal and -shm files when the scenario ends.
// The file is named with the process's id (idemcheck-sqlite-PID-N.db);
// files of processes that died before removing theirs are swept the first
// time a process makes one. Started (Start), the run's scenarios after the
// first get a copy of the file the schema made, made ahead.
//
// Settings: Params, the query parameters of a modernc.org/sqlite DSN, as
// the team opens its database in production (see Params). The defaults
// are SQLite's and the driver's: a rollback journal (journal_mode DELETE),
// no busy timeout, deferred BEGIN.
//
// Locking is the engine's own, on a real file: in rollback-journal mode a
// reader gets in beside a transaction that holds the write lock (RESERVED)
// and reads the committed state; in WAL a reader is never blocked. Where
// the engine would wait for a lock (a connection with a busy timeout), it
// calls the connection's busy handler, which is the harness's on every
// connection (see Waiter and package sqlitebusy): it never sleeps on the
// machine's clock. Where the engine answers busy at once (no busy timeout,
// a deadlock it detects, a stale WAL snapshot), the busy error is the
// call's answer.
//
// Clock: SQLite reads the machine's clock in its C library, where no Go
// clock reaches. Every statement (the schema's, the harness's, the
// workers') is rewritten by internal/consumerharness/sqlclock to call the function
// idemcheck_now(K) instead, registered on this backend's driver
// (connections of other drivers do not have it), which returns the
// scenario's time of database K.
type SQLite struct {
	// Params are the team's settings, as the query parameters of a
	// modernc.org/sqlite DSN, e.g.
	// "_pragma=journal_mode(WAL)&_pragma=busy_timeout(5000)&_txlock=immediate&_pragma=foreign_keys(1)".
	// Every connection opens with them, the workers' and the harness's.
	// Accepted: the driver's keys (_pragma with one PRAGMA SQLite knows,
	// _busy_timeout, _txlock, _journal_mode, _foreign_keys, _synchronous,
	// _time_format, ...), cache=private and psow. Refused, with an error
	// naming the parameter: a database name (the harness makes the file),
	// parameters that would make the database not the run's own or turn
	// the engine's locking off (vfs, mode, immutable, nolock, modeof,
	// cache=shared), PRAGMA locking_mode=EXCLUSIVE (the harness opens
	// several connections), and keys the driver does not know.
	Params string
}

// drv is the driver of every SQLite connection the backend opens: it has
// the clock function.
var drv = func() *sqlite.Driver {
	d := &sqlite.Driver{}
	d.MustRegisterScalarFunction(sqlclock.SQLiteFunc, 1, func(_ *sqlite.FunctionContext, args []driver.Value) (driver.Value, error) {
		key, ok := args[0].(int64)
		if !ok {
			return nil, fmt.Errorf("%s: the key is %T, not an integer", sqlclock.SQLiteFunc, args[0])
		}
		now, ok := clocks.Load(key)
		if !ok {
			return nil, fmt.Errorf("%s(%d): no such database (its scenario is over)", sqlclock.SQLiteFunc, key)
		}
		return now.(func() time.Time)().UTC().Format(sqlclock.SQLiteTimeFormat), nil
	})
	return d
}()

// clocks are the clocks of the open databases, by key.
var clocks sync.Map // int64 -> func() time.Time

var dbSeq atomic.Int64

// Name implements Backend.
func (SQLite) Name() string { return "sqlite" }

// Fresh implements Backend.
func (s SQLite) Fresh(ctx context.Context) (Database, error) {
	p, err := parseSQLiteParams(s.Params)
	if err != nil {
		return nil, err
	}
	return freshSQLite(ctx, p, nil)
}

// freshSQLite makes a scenario's database: an empty file, or a copy of
// template (what the run's schema made) when it is not nil.
func freshSQLite(ctx context.Context, p sqliteParams, template []byte) (*sqliteDB, error) {
	key := dbSeq.Add(1)
	path := dbFile(key)
	d := &sqliteDB{dsn: fileDSN(path, p.open), params: p, key: key, path: path}
	if template != nil {
		// The engine's files are made by whoever holds none of its locks:
		// no connection is open yet.
		if err := os.WriteFile(path, template, 0o644); err != nil {
			return nil, fmt.Errorf("sqlite: make the scenario's database %s: %w", path, err)
		}
		d.prepared = true
	}
	d.admin = sql.OpenDB(adminConn{d})
	// The admin handle keeps one connection open for the scenario's life:
	// the effects queries run after every drain.
	d.admin.SetMaxIdleConns(1)
	d.admin.SetMaxOpenConns(1)
	if template == nil {
		// Make the file now, so that a directory it cannot be made in is
		// an error here. (A copy has shown it can.)
		if err := d.admin.PingContext(ctx); err != nil {
			d.admin.Close()
			removeDB(path)
			return nil, fmt.Errorf("sqlite: make the scenario's database %s: %w", path, err)
		}
	}
	clocks.Store(key, func() time.Time { return Epoch })
	return d, nil
}

type sqliteDB struct {
	admin  *sql.DB
	dsn    string
	params sqliteParams
	key    int64
	path   string

	// run is the run the database belongs to, if it was started
	// (SQLite.Start): it keeps what the schema made, to copy.
	run *sqliteRun
	// prepared is set when the file is a copy of what the schema made.
	prepared bool
	// ran records the statements the admin handle ran while the schema
	// ran (nil otherwise): whether what they made can be copied.
	mu  sync.Mutex
	ran *[]string
	// spares are worker connections opened ahead (see SQLite.Start);
	// opens counts the worker connections the scenario asked for.
	spares []*waitConn
	opens  int32
}

// record notes a statement the admin handle runs.
func (d *sqliteDB) record(query string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.ran != nil {
		*d.ran = append(*d.ran, query)
	}
}

// adminConn opens the admin handle's connection: the team's settings, and
// the harness's busy handler with no wait (where the engine would wait, it
// answers busy at once: the harness's own reads never wait for a worker).
type adminConn struct{ d *sqliteDB }

func (a adminConn) Connect(context.Context) (driver.Conn, error) {
	raw, h, err := openSQLite(a.d.dsn, a.d.params, nil)
	if err != nil {
		return nil, err
	}
	return &waitConn{raw: raw, h: h, record: a.d.record}, nil
}

func (a adminConn) Driver() driver.Driver { return drv }

// SetClock implements Clocked.
func (d *sqliteDB) SetClock(now func() time.Time) { clocks.Store(d.key, now) }

// Rewrite implements Clocked.
func (d *sqliteDB) Rewrite(query string) (string, []string) { return sqlclock.SQLite(query, d.key) }

// ArgNotes implements Clocked.
func (d *sqliteDB) ArgNotes(args []driver.NamedValue) []string {
	return sqlclock.ArgNotes(false, args)
}

func (d *sqliteDB) Admin() *sql.DB { return d.admin }

// Open implements Database: a connection that never waits (where the
// engine would wait for a lock, it answers busy at once, and the caller
// decides).
func (d *sqliteDB) Open() (driver.Conn, error) { return d.OpenWaiting(nil) }

// OpenWaiting implements Waiter.
func (d *sqliteDB) OpenWaiting(wait func(time.Duration) bool) (driver.Conn, error) {
	d.mu.Lock()
	d.opens++
	if n := len(d.spares); n > 0 {
		c := d.spares[n-1]
		d.spares = d.spares[:n-1]
		d.mu.Unlock()
		c.h.SetWait(wait)
		return c, nil
	}
	d.mu.Unlock()
	raw, h, err := openSQLite(d.dsn, d.params, wait)
	if err != nil {
		return nil, err
	}
	return &waitConn{raw: raw, h: h}, nil
}

func (d *sqliteDB) IsBusy(err error) bool {
	var se *sqlite.Error
	if errors.As(err, &se) {
		code := se.Code() & 0xff
		return code == 5 || code == 6 // SQLITE_BUSY, SQLITE_LOCKED
	}
	return false
}

// Close closes the admin handle and the connections opened ahead and not
// used, and removes the database's files.
func (d *sqliteDB) Close() error {
	d.mu.Lock()
	spares := d.spares
	d.spares = nil
	if d.run != nil && d.opens > 0 {
		d.run.spares.Store(min(d.opens, 4))
	}
	d.mu.Unlock()
	for _, c := range spares {
		c.Close()
	}
	clocks.Delete(d.key)
	return errors.Join(d.admin.Close(), removeDB(d.path))
}
