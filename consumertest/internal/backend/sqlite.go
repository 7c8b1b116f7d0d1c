package backend

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"os"
	"sync/atomic"

	"modernc.org/sqlite"
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
type SQLite struct{}

var dbSeq atomic.Int64

// Name implements Backend.
func (SQLite) Name() string { return "sqlite" }

// Fresh implements Backend.
func (SQLite) Fresh(ctx context.Context) (Database, error) {
	name := fmt.Sprintf("/idemcheck-consumer-%d-%d", os.Getpid(), dbSeq.Add(1))
	dsn := "file:" + name + "?vfs=memdb&_txlock=immediate&_pragma=busy_timeout(0)"
	admin, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, err
	}
	// The admin handle keeps one connection open for the scenario's life:
	// a memdb database lives as long as one connection to it does.
	admin.SetMaxIdleConns(1)
	admin.SetMaxOpenConns(1)
	if err := admin.PingContext(ctx); err != nil {
		admin.Close()
		return nil, err
	}
	return &sqliteDB{admin: admin, dsn: dsn}, nil
}

type sqliteDB struct {
	admin *sql.DB
	dsn   string
}

func (d *sqliteDB) Admin() *sql.DB { return d.admin }

func (d *sqliteDB) Open() (driver.Conn, error) {
	return (&sqlite.Driver{}).Open(d.dsn)
}

func (d *sqliteDB) IsBusy(err error) bool {
	var se *sqlite.Error
	if errors.As(err, &se) {
		code := se.Code() & 0xff
		return code == 5 || code == 6 // SQLITE_BUSY, SQLITE_LOCKED
	}
	return false
}

func (d *sqliteDB) Close() error { return d.admin.Close() }
