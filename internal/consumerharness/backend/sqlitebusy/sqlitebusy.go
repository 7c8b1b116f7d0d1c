// Package sqlitebusy hands every wait of SQLite for a lock, on a
// connection of modernc.org/sqlite's driver, to a Go function instead of
// the machine's clock.
//
// SQLite waits for a lock another connection holds by calling the
// connection's busy handler, again and again, until the lock is had or the
// handler answers "give up" (the statement then fails with SQLITE_BUSY).
// PRAGMA busy_timeout = N installs SQLite's own handler, which sleeps until
// N ms have passed; modernc.org/sqlite replaces that one, at every call
// made with a cancellable context, by its own, which sleeps too. Install
// puts a handler of this package in their place, which calls the
// connection's wait function with the connection's busy timeout, and keeps
// it there: a PRAGMA busy_timeout the connection runs later (alone, in a
// script of several statements, or prepared and never run) changes the
// timeout wait receives, never who waits. A connection with no busy
// timeout (0, SQLite's default) has no handler at all: SQLite answers busy
// at once, as it would.
//
// How the handler is kept in place: SQLite installs its own handler when
// it compiles a PRAGMA busy_timeout, so Ensure, run by the caller before
// every call on the connection and after every prepare, puts this
// package's back; and a statement trace (sqlite3_trace_v2,
// SQLITE_TRACE_STMT), called by SQLite as each statement starts to run,
// before it takes any lock, does the same for the statements of a script
// run by a single call. Neither ever sleeps.
//
// SQLite never calls a busy handler where waiting could not help: a
// transaction that already reads and then meets another's write lock (in
// rollback-journal mode, the deadlock rule), a stale snapshot in WAL
// (SQLITE_BUSY_SNAPSHOT), a shared-cache table lock. Those answer busy at
// once, and wait is not called.
package sqlitebusy

import (
	"database/sql/driver"
	"sync"
	"time"
	"unsafe"

	"modernc.org/libc"
	sqlite3 "modernc.org/sqlite/lib"
)

// Handler is one connection's busy handler.
type Handler struct {
	db  uintptr // sqlite3*
	tls *libc.TLS
	// wait decides each wait; nil gives up at once.
	wait func(timeout time.Duration) bool
}

// handlers finds a connection's Handler from its sqlite3*, the argument
// SQLite gives the busy handler.
var handlers sync.Map // uintptr -> *Handler

// The C-callable pointers of the handler and of the trace callback.
var (
	busyFP  = cFuncPointer(onBusy)
	traceFP = cFuncPointer(onTrace)
)

// Install gives conn, a connection of modernc.org/sqlite's driver just
// opened, this package's busy handler: from now on each wait of SQLite for
// a lock calls wait (nil: SQLite answers busy at once, as when its timeout
// has run out). timeout is the busy timeout to set (0: none, SQLite
// answers busy at once and wait is never called), replacing whatever the
// connection's DSN set. Release the Handler before closing conn.
func Install(conn driver.Conn, timeout time.Duration, wait func(time.Duration) bool) (*Handler, error) {
	db, tls, err := handles(conn)
	if err != nil {
		return nil, err
	}
	h := &Handler{db: db, tls: tls, wait: wait}
	handlers.Store(db, h)
	sqlite3.Xsqlite3_trace_v2(tls, db, sqlite3.SQLITE_TRACE_STMT, traceFP, db)
	h.SetTimeout(timeout)
	return h, nil
}

// SetWait makes wait decide the connection's waits from now on (nil: none,
// busy at once). It must not be called while a call on the connection runs.
func (h *Handler) SetWait(wait func(time.Duration) bool) { h.wait = wait }

// SetTimeout sets the connection's busy timeout, as PRAGMA busy_timeout
// would, keeping this package's handler. Millisecond precision, as
// SQLite's; 0 or less: no timeout.
func (h *Handler) SetTimeout(timeout time.Duration) {
	ms := timeout.Milliseconds()
	if ms <= 0 {
		sqlite3.Xsqlite3_busy_handler(h.tls, h.db, 0, 0)
		return
	}
	sqlite3.Xsqlite3_busy_handler(h.tls, h.db, busyFP, h.db)
	// sqlite3_busy_handler clears the timeout, which PRAGMA busy_timeout
	// reports and onBusy reads.
	sqlite3Of(h.db).FbusyTimeout = int32(min(ms, 1<<31-1))
}

// Timeout is the connection's busy timeout (0: none).
func (h *Handler) Timeout() time.Duration {
	return time.Duration(sqlite3Of(h.db).FbusyTimeout) * time.Millisecond
}

// Ensure puts this package's handler back if a PRAGMA busy_timeout
// replaced it, keeping the timeout the PRAGMA set. One comparison when
// nothing changed.
func (h *Handler) Ensure() { ensure(h.tls, h.db) }

// Release forgets the connection; call it before closing the connection.
func (h *Handler) Release() {
	sqlite3.Xsqlite3_trace_v2(h.tls, h.db, 0, 0, 0)
	handlers.CompareAndDelete(h.db, h)
}

// ensure puts this package's handler back on db if SQLite's (or the
// driver's) replaced it.
func ensure(tls *libc.TLS, db uintptr) {
	d := sqlite3Of(db)
	switch fp := d.FbusyHandler.FxBusyHandler; {
	case fp == 0:
		return // no timeout: SQLite answers busy at once
	case fp == busyFP && d.FbusyHandler.FpBusyArg == db:
		return
	}
	ms := d.FbusyTimeout
	if ms <= 0 {
		sqlite3.Xsqlite3_busy_handler(tls, db, 0, 0)
		return
	}
	sqlite3.Xsqlite3_busy_handler(tls, db, busyFP, db)
	d.FbusyTimeout = ms
}

// onBusy is the busy handler SQLite calls (its argument is the sqlite3*)
// each time it finds a lock taken where it may wait: 1 tries again, 0 gives
// up. It runs on the goroutine making the call, inside SQLite, holding the
// connection's mutex.
func onBusy(_ *libc.TLS, db uintptr, _ int32) int32 {
	v, ok := handlers.Load(db)
	if !ok {
		return 0
	}
	h := v.(*Handler)
	ms := sqlite3Of(db).FbusyTimeout
	if h.wait == nil || ms <= 0 {
		return 0
	}
	if h.wait(time.Duration(ms) * time.Millisecond) {
		return 1
	}
	return 0
}

// onTrace is the statement trace SQLite calls as each statement starts to
// run, before it takes a lock: a PRAGMA busy_timeout earlier in the same
// script installed SQLite's sleeping handler, which must not meet a lock.
func onTrace(tls *libc.TLS, _ uint32, db, _, _ uintptr) int32 {
	ensure(tls, db)
	return 0
}

// sqlite3Of is the connection's struct at db. It lives in C memory, which
// the garbage collector neither moves nor frees; reading the uintptr's bits
// as a pointer (rather than converting it) says so to go vet.
func sqlite3Of(db uintptr) *sqlite3.Tsqlite3 {
	return *(**sqlite3.Tsqlite3)(unsafe.Pointer(&db))
}

// cFuncPointer is the C pointer to a Go function declared at top level, as
// modernc.org/sqlite makes them (its own cFuncPointer): the address of
// the function value, which for a top-level function is static.
func cFuncPointer[T any](f T) uintptr {
	return *(*uintptr)(unsafe.Pointer(&struct{ f T }{f}))
}
