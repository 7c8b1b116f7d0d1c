// Package backend is the seam between the consumer harness and the database
// a team's consumer runs on. The harness asks a Backend for a fresh Database
// per scenario, runs the team's schema and its effects queries on the
// database's Admin handle (outside the scheduler), and opens every worker's
// connections through Open (or OpenWaiting), wrapped by
// internal/consumerharness/sqlhook so that each call is a scheduling point.
//
// SQLite (modernc.org/sqlite, the default: a real file on a RAM-backed
// directory, with the team's journal mode, busy timeout and BEGIN mode),
// PostgreSQL and MySQL (or MariaDB) are the backends. Another database plugs in by
// implementing Backend: it must give each scenario a database no other
// scenario sees, and roll a transaction back when its connection is
// closed, before Close returns. Where its engine meets a lock held by
// another connection, it must either answer promptly with an error IsBusy
// recognises (so that the scheduler, not the database, decides who waits),
// or, if it is a Waiter, hand the wait to the scheduler. A Database that
// also implements Clocked has its own clock (CURRENT_TIMESTAMP, now(),
// column defaults) follow the scenario's; the harness reports the clock of
// one that does not as the machine's. The model checker names a state by
// a Describer's own description of its content (SQLite's and
// PostgreSQL's catalogs are read directly), and a Deadlocker answers a
// wait the scheduler gives up in a deadlock as its engine would.
package backend

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"io"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// Backend makes fresh databases.
type Backend interface {
	// Name names the backend in traces and reports ("sqlite").
	Name() string
	// Fresh returns an empty database for one scenario.
	Fresh(ctx context.Context) (Database, error)
}

// Database is one scenario's database.
type Database interface {
	// Admin is the harness's own handle: schema, effects and dedupe
	// queries. Its calls are not scheduling points.
	Admin() *sql.DB
	// Open opens a new raw connection for a worker; the harness wraps it.
	// On a Waiter, the connection never waits for a lock: where its engine
	// would, it answers busy at once, as with no busy timeout.
	Open() (driver.Conn, error)
	// IsBusy recognises the error of a statement that met a lock held by
	// another connection.
	IsBusy(err error) bool
	// Close drops the database.
	Close() error
}

// Waiter is a Database whose engine waits for locks itself (SQLite: a
// connection with a busy timeout waits where another connection holds the
// lock it needs), and lets the harness decide each wait instead of the
// machine's clock: a wait the engine would make becomes a scheduling
// point, and a busy answer the engine gives at once stays the call's
// answer.
type Waiter interface {
	// OpenWaiting opens a worker connection whose every wait for a lock
	// calls wait instead of sleeping: wait(timeout) blocks until the
	// scheduler decides, and returns true to try again, false to give up
	// (the engine then answers its busy error, as when its busy timeout
	// runs out). timeout is the connection's busy timeout as the team
	// declared it (at open, or later by PRAGMA busy_timeout on that
	// connection). A connection with no busy timeout never waits: the
	// engine answers busy at once and wait is never called; neither is it
	// called where the engine itself refuses to wait (a deadlock it
	// detects, SQLITE_BUSY_SNAPSHOT in WAL), nor while the connection
	// opens.
	//
	// wait runs on the goroutine of the waiting call, inside the engine,
	// which holds the connection's mutex meanwhile: it must return (never
	// end its goroutine with runtime.Goexit), and the connection cannot be
	// closed until it has (Close blocks). To crash a waiting worker, make
	// wait return false and crash the worker at its next point.
	OpenWaiting(wait func(timeout time.Duration) bool) (driver.Conn, error)
}

// Deadlocker is a Database whose engine finds a deadlock between
// connections itself and answers it: where the scheduler finds workers
// waiting for each other's locks and gives one wait up, that call
// answers as the engine would, not with the busy error it got. Its
// worker connections (as Open returns them) implement
// sqlhook.Deadlocker: Deadlock(busy error) error ends the connection's
// transaction as the engine's detector would and returns its error.
type Deadlocker interface {
	// DeadlockAnswer says, for the trace, what the engine answers.
	DeadlockAnswer() string
}

// Starter is a Backend that keeps state across the scenarios of one run
// (pooled connections, a schema of the run's own): the harness starts it
// once per run, outside any testing/synctest bubble, uses the Session as
// the run's Backend, and closes it when the run ends.
type Starter interface {
	Start(ctx context.Context) (Session, error)
}

// Session is a started Backend.
type Session interface {
	Backend
	io.Closer
}

// Preparer is a Database that runs the team's schema itself: run runs it
// on the Admin handle. A database reused across scenarios runs it once and
// then restores the state it left.
type Preparer interface {
	Prepare(ctx context.Context, run func(*sql.DB) error) error
}

// Clocked is a Database whose own clock (SQLite's CURRENT_TIMESTAMP and
// 'now', PostgreSQL's now() and CURRENT_TIMESTAMP, column defaults) the
// harness points at the scenario's. The harness rewrites every statement
// it or a worker runs with Rewrite, and tells the database its clock with
// SetClock; until then the database's clock stands at Epoch.
type Clocked interface {
	// SetClock makes now the database's clock for the scenario.
	SetClock(now func() time.Time)
	// Rewrite returns the statement to run instead of query, and what in
	// it stays on the machine's clock.
	Rewrite(query string) (string, []string)
	// ArgNotes returns what among a statement's arguments the database
	// would read from the machine's clock.
	ArgNotes(args []driver.NamedValue) []string
}

// Epoch is the scenario's time zero, 2000-01-01T00:00:00Z: where a
// Clocked database's clock stands before SetClock (its schema runs then).
var Epoch = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

// Pgx is a Database a consumer written against pgx runs on: PostgreSQL's.
// The consumer gets pools of its own (one per worker), whose calls the
// harness schedules through pgx's tracer hooks rather than a wrapping
// database/sql driver.
type Pgx interface {
	// PgxConfig is the configuration of a worker's pool on the
	// scenario's database, with the session every worker connection has
	// (search_path, lock_timeout): a new one at each call.
	PgxConfig() (*pgxpool.Config, error)
	// PgxBefore readies the database for a worker's statement (as
	// written; a batch's statements one by one): it refuses a statement
	// a run cannot isolate (see Refused), and the clock table follows the
	// scenario's time once the scenario reads it.
	PgxBefore(query string) error
	// PgxTxStart is the statement that records, right after a worker's
	// BEGIN, the time the transaction began (what now() reads in it).
	PgxTxStart() string
}

// Describer is a Database that describes its own content to the model
// checker (Verify), which names a state by what the database holds. A
// Database that is no Describer is read through SQLite's or PostgreSQL's
// catalog, by its Backend's Name.
type Describer interface {
	// Describe reads the catalog as it stands: the tables the team's
	// code made, and how to read them.
	Describe(ctx context.Context) (Description, error)
}

// Description is what a Describer's database holds.
type Description struct {
	// Queries read the content, row for row, in an order that depends on
	// the content only (never on the rows' physical order, nor on the
	// database's own name): every table the team's code made, and every
	// counter the next statement reads (AUTO_INCREMENT, sequences).
	Queries []string
	// Tables are the tables' names, lower-cased, as statements name them.
	Tables []string
	// Snapshot: a transaction's plain reads see the database as it stood
	// at its first read (REPEATABLE READ), so that a read inside a
	// transaction does not commute with another connection's commit,
	// whatever tables each touches.
	Snapshot bool
}
