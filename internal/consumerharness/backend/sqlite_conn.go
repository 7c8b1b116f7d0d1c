package backend

import (
	"context"
	"database/sql/driver"
	"time"

	"github.com/idemcheck/idemcheck/internal/consumerharness/backend/sqlitebusy"
)

// openSQLite opens a connection to the database of dsn with the harness's
// busy handler (see sqlitebusy): the declared busy timeout, each wait
// decided by wait (nil: none, busy at once).
func openSQLite(dsn string, p sqliteParams, wait func(time.Duration) bool) (driver.Conn, *sqlitebusy.Handler, error) {
	raw, err := drv.Open(dsn)
	if err != nil {
		return nil, nil, err
	}
	h, err := sqlitebusy.Install(raw, p.busy, wait)
	if err != nil {
		raw.Close()
		return nil, nil, err
	}
	return raw, h, nil
}

// waitConn is a connection of the SQLite backend: modernc.org/sqlite's,
// with the harness's busy handler put back before every call (a PRAGMA
// busy_timeout replaces it when compiled). Calls reach the driver with no
// context: a cancellable one would make the driver install its own
// handler, which sleeps on the machine's clock, and the harness's calls
// are never cancelled.
type waitConn struct {
	raw driver.Conn
	h   *sqlitebusy.Handler
	// record, when set, is told every statement (the admin handle's,
	// while the schema runs).
	record func(query string)
	closed bool
}

var (
	_ driver.Conn               = (*waitConn)(nil)
	_ driver.ConnBeginTx        = (*waitConn)(nil)
	_ driver.ExecerContext      = (*waitConn)(nil)
	_ driver.QueryerContext     = (*waitConn)(nil)
	_ driver.ConnPrepareContext = (*waitConn)(nil)
	_ driver.SessionResetter    = (*waitConn)(nil)
	_ driver.Validator          = (*waitConn)(nil)
	_ driver.Pinger             = (*waitConn)(nil)
)

func (c *waitConn) Prepare(query string) (driver.Stmt, error) {
	return c.PrepareContext(context.Background(), query)
}

func (c *waitConn) PrepareContext(_ context.Context, query string) (driver.Stmt, error) {
	if c.record != nil {
		c.record(query)
	}
	c.h.Ensure()
	st, err := c.raw.(driver.ConnPrepareContext).PrepareContext(context.Background(), query)
	// Compiling a PRAGMA busy_timeout installs SQLite's handler.
	c.h.Ensure()
	if err != nil {
		return nil, err
	}
	return &waitStmt{st: st, h: c.h}, nil
}

func (c *waitConn) Begin() (driver.Tx, error) {
	return c.BeginTx(context.Background(), driver.TxOptions{})
}

func (c *waitConn) BeginTx(_ context.Context, opts driver.TxOptions) (driver.Tx, error) {
	c.h.Ensure()
	tx, err := c.raw.(driver.ConnBeginTx).BeginTx(context.Background(), opts)
	if err != nil {
		return nil, err
	}
	return waitTx{tx: tx, h: c.h}, nil
}

func (c *waitConn) ExecContext(_ context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	if c.record != nil {
		c.record(query)
	}
	c.h.Ensure()
	return c.raw.(driver.ExecerContext).ExecContext(context.Background(), query, args)
}

func (c *waitConn) QueryContext(_ context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	if c.record != nil {
		c.record(query)
	}
	c.h.Ensure()
	return c.raw.(driver.QueryerContext).QueryContext(context.Background(), query, args)
}

func (c *waitConn) Ping(context.Context) error {
	_, err := c.ExecContext(context.Background(), "SELECT 1", nil)
	return err
}

func (c *waitConn) ResetSession(context.Context) error {
	return c.raw.(driver.SessionResetter).ResetSession(context.Background())
}

func (c *waitConn) IsValid() bool { return c.raw.(driver.Validator).IsValid() }

// Close closes the connection; again, it does nothing (the handles are
// freed).
func (c *waitConn) Close() error {
	if c.closed {
		return nil
	}
	c.closed = true
	c.h.Release()
	return c.raw.Close()
}

// waitTx ends a transaction of a waitConn (a COMMIT may wait for readers
// in rollback-journal mode).
type waitTx struct {
	tx driver.Tx
	h  *sqlitebusy.Handler
}

func (t waitTx) Commit() error {
	t.h.Ensure()
	return t.tx.Commit()
}

func (t waitTx) Rollback() error {
	t.h.Ensure()
	return t.tx.Rollback()
}

// waitStmt is a prepared statement of a waitConn.
type waitStmt struct {
	st driver.Stmt
	h  *sqlitebusy.Handler
}

var (
	_ driver.StmtExecContext  = (*waitStmt)(nil)
	_ driver.StmtQueryContext = (*waitStmt)(nil)
)

func (s *waitStmt) Close() error  { return s.st.Close() }
func (s *waitStmt) NumInput() int { return s.st.NumInput() }

func (s *waitStmt) Exec(args []driver.Value) (driver.Result, error) {
	s.h.Ensure()
	//lint:ignore SA1019 the deprecated form, for callers that use it
	return s.st.Exec(args)
}

func (s *waitStmt) Query(args []driver.Value) (driver.Rows, error) {
	s.h.Ensure()
	//lint:ignore SA1019 the deprecated form, for callers that use it
	return s.st.Query(args)
}

func (s *waitStmt) ExecContext(_ context.Context, args []driver.NamedValue) (driver.Result, error) {
	s.h.Ensure()
	return s.st.(driver.StmtExecContext).ExecContext(context.Background(), args)
}

func (s *waitStmt) QueryContext(_ context.Context, args []driver.NamedValue) (driver.Rows, error) {
	s.h.Ensure()
	return s.st.(driver.StmtQueryContext).QueryContext(context.Background(), args)
}
