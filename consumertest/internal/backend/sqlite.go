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

	"github.com/idemcheck/idemcheck/consumertest/internal/sqlclock"
)

// SQLite is the embedded backend: every scenario gets its own in-memory
// database in SQLite's memdb VFS, shared by the connections of every worker
// and the harness's admin handle.
//
// Locking: transactions begin IMMEDIATE (_txlock=immediate), so a
// transaction takes the database's write lock at BEGIN, as SQLite advises
// for read-modify-write transactions; a worker that finds it taken waits at
// its BEGIN (the scheduler parks it and runs another worker) instead of
// failing later on a lock upgrade. There is no busy timeout: a lock
// conflict answers SQLITE_BUSY at once and the scheduler decides.
//
// Clock: SQLite reads the machine's clock in its C library, where no Go
// clock reaches. Every statement (the schema's, the harness's, the
// workers') is rewritten by consumertest/internal/sqlclock to call the function
// idemcheck_now(K) instead, registered on this backend's driver
// (connections of other drivers do not have it), which returns the
// scenario's time of database K.
type SQLite struct{}

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

// connector opens connections to one database through drv.
type connector struct{ dsn string }

func (c connector) Connect(context.Context) (driver.Conn, error) { return drv.Open(c.dsn) }
func (c connector) Driver() driver.Driver                        { return drv }

var dbSeq atomic.Int64

// Name implements Backend.
func (SQLite) Name() string { return "sqlite" }

// Fresh implements Backend.
func (SQLite) Fresh(ctx context.Context) (Database, error) {
	key := dbSeq.Add(1)
	name := fmt.Sprintf("/idemcheck-consumer-%d-%d", os.Getpid(), key)
	dsn := "file:" + name + "?vfs=memdb&_txlock=immediate&_pragma=busy_timeout(0)"
	admin := sql.OpenDB(connector{dsn})
	// The admin handle keeps one connection open for the scenario's life:
	// a memdb database lives as long as one connection to it does.
	admin.SetMaxIdleConns(1)
	admin.SetMaxOpenConns(1)
	if err := admin.PingContext(ctx); err != nil {
		admin.Close()
		return nil, err
	}
	clocks.Store(key, func() time.Time { return Epoch })
	return &sqliteDB{admin: admin, dsn: dsn, key: key}, nil
}

type sqliteDB struct {
	admin *sql.DB
	dsn   string
	key   int64
}

// SetClock implements Clocked.
func (d *sqliteDB) SetClock(now func() time.Time) { clocks.Store(d.key, now) }

// Rewrite implements Clocked.
func (d *sqliteDB) Rewrite(query string) (string, []string) { return sqlclock.SQLite(query, d.key) }

// ArgNotes implements Clocked.
func (d *sqliteDB) ArgNotes(args []driver.NamedValue) []string {
	return sqlclock.ArgNotes(false, args)
}

func (d *sqliteDB) Admin() *sql.DB { return d.admin }

func (d *sqliteDB) Open() (driver.Conn, error) { return drv.Open(d.dsn) }

func (d *sqliteDB) IsBusy(err error) bool {
	var se *sqlite.Error
	if errors.As(err, &se) {
		code := se.Code() & 0xff
		return code == 5 || code == 6 // SQLITE_BUSY, SQLITE_LOCKED
	}
	return false
}

func (d *sqliteDB) Close() error {
	clocks.Delete(d.key)
	return d.admin.Close()
}
