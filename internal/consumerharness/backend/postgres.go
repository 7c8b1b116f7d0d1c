package backend

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/idemcheck/idemcheck/internal/consumerharness/sqlclock"
	"github.com/idemcheck/idemcheck/internal/outside"
	"github.com/idemcheck/idemcheck/internal/sqlscan"
)

// LockWait is how long a worker's statement may wait for a lock on
// PostgreSQL before the server cancels it (lock_timeout) and the harness
// parks the worker as waiting. While a statement runs no other worker
// moves, so a statement that waits at all waits for a lock that only
// another worker's next move can release: the wait always ends in the
// timeout, however long it is.
const LockWait = 2 * time.Millisecond

// waitSavepoint is the savepoint a statement that might wait runs under,
// so that a lock timeout does not abort the team's transaction.
const waitSavepoint = "idemcheck_lock_wait"

// Postgres is the PostgreSQL backend, at DSN (a pgx connection string).
//
// Isolation: a run (one Check, Hunt or Replay) plays its scenarios on a
// database of its own, made from template1 (CREATE DATABASE), where the
// team's schema runs once, in the run's first scenario. Whatever the
// schema makes (schemas of its own, tables in any schema, sequences,
// functions, triggers, types, views, seeded rows) is there and nowhere
// else, so two runs never meet, even when both schemas say CREATE SCHEMA
// projection. Every connection's search_path is public, idemcheck,
// pg_catalog: the team's unqualified names are in public, as on a
// database of its own; idemcheck is the harness's schema.
//
// Why a database: a schema per run (what this backend did before) cannot
// hold a schema's own schemas, nor its types or functions named with a
// schema; rewriting the team's names would not reach its dynamic SQL.
// A database per scenario, copied from a template, is exact but costs a
// DROP and a CREATE DATABASE and new connections every scenario: measured
// on 2 shared cores at load average 7, 0.37 s a copy
// (BenchmarkPostgresReset/copy), so that the ADR example plays 1-3
// scenarios a second. So a run keeps its database and resets it (1.2 ms):
// 143-167 scenarios a second at load average 8. A run costs a CREATE and
// a DROP DATABASE (which makes the server checkpoint) more than a schema
// did: 0.35-0.45 s at load average 6.
//
// Reset: when the role is a superuser, the harness reads from the catalog
// the tables and sequences of every schema the team made and the rows it
// seeded, and starts each later scenario by deleting every row, putting
// the seeded rows back, setting the sequences back and unlinking large
// objects, in one round trip, with triggers and foreign keys off
// (session_replication_role = replica): 1.2 ms. Event triggers note the
// DDL a scenario commits (outside the temporary schema); the reset's
// first statement fails when there is some. When every object it touched
// is one the scenario made (a table a library makes on first use, an
// index, a schema, a view, a function, a type, a trigger), undo drops
// them, newest first, without CASCADE: 12 ms. Any other change (an ALTER
// or a DROP of the schema's objects, a GRANT, a kind of object undo does
// not know, DDL on event triggers, which no event trigger sees) gets the
// run a new copy of its template database, made on first need, where the
// team's schema runs again. CREATE ... IF NOT EXISTS of what is there
// changes nothing and costs nothing. A role that is not a superuser may
// neither switch triggers off nor make event triggers: each of its
// scenarios gets a new copy, and so do those of a schema that leaves
// large objects. The role needs CREATEDB.
//
// Leftovers: the run's databases are named idemcheck_r<pid>_<n>_<random>
// with _w (the scenarios') and _t (the template), and every connection
// of the run bears that name (application_name); one of them, on the
// DSN's database, lives from before the databases are made until they
// are dropped. Close drops them; a run killed before (SIGKILL, a test
// binary's timeout) leaves them, and the next Start of any run on the
// server drops every such database whose run has no connection left (the
// server ends a connection when its process dies), and no other.
//
// What a run cannot isolate is refused (see Refused): roles, databases,
// tablespaces, extensions (but CREATE EXTENSION IF NOT EXISTS of one
// template1 has), the server's configuration, replication slots.
//
// Connections are pooled across the scenarios of a run: a worker's
// connection that closes (a worker that stops, or crashes) is rolled back,
// its session reset (RESET ALL, its authorization and role, temporary
// tables, sequence state, advisory locks, LISTEN, held cursors, the
// statements it prepared with PREPARE), synchronously, before another
// worker gets it.
//
// Lock waits: every worker connection runs with lock_timeout = LockWait.
// See LockWait and IsBusy.
//
// Clock: the harness's schema idemcheck defines now(),
// transaction_timestamp(), statement_timestamp(), clock_timestamp() and
// timeofday(), and every connection's search_path names it before
// pg_catalog, so that they are found before the server's own (pg_catalog
// is searched first unless the path names it): calls in any schema,
// column defaults in any schema (bound when the table is made) and
// function bodies (resolved when they run) reach them. They read the
// scenario's time from idemcheck.clock, which the reset never touches and
// the harness updates, on a connection of its own, before a worker's
// statement when the scenario's time has moved; now() and
// transaction_timestamp() read the time the transaction began, which
// BEGIN records (set_config('idemcheck.tx_now', ..., true), in the same
// round trip). The SQL standard's keywords (CURRENT_TIMESTAMP, ...) are
// rewritten into calls of now() by internal/consumerharness/sqlclock, in the
// schema too. Inside a REPEATABLE READ or SERIALIZABLE transaction,
// statement_timestamp() and clock_timestamp() read the clock as the
// transaction's snapshot has it. A search_path the team sets itself (SET
// search_path, a function's SET search_path, set_config) puts pg_catalog's
// clock first: the statement that sets it is named as on the machine's
// clock.
type Postgres struct{ DSN string }

// Name implements Backend.
func (Postgres) Name() string { return "postgres" }

// Fresh implements Backend; a Postgres backend is used through Start.
func (Postgres) Fresh(context.Context) (Database, error) {
	return nil, errors.New("the postgres backend must be started first (Start)")
}

var pgRunSeq atomic.Int64

// Start implements Starter: it drops the leftovers of runs that are gone,
// makes the run's database with the harness's schema, and opens its
// handles. It must be called outside any testing/synctest bubble: the
// connections it and its session make are used from the bubbles of many
// scenarios.
func (p Postgres) Start(ctx context.Context) (Session, error) {
	cfg, err := pgx.ParseConfig(p.DSN)
	if err != nil {
		return nil, fmt.Errorf("postgres DSN: %w", err)
	}
	if cfg.ConnectTimeout == 0 {
		cfg.ConnectTimeout = 10 * time.Second
	}
	run := fmt.Sprintf("%s%d_%d_%08x", pgRunPrefix, os.Getpid(), pgRunSeq.Add(1), rand.Uint32())
	s := &pgSession{run: run, tmpl: run + "_t", work: run + "_w", clockAt: Epoch, dsn: p.DSN}
	// A run's data need not survive a crash of the server: commits do not
	// wait for the write-ahead log to reach the disk.
	cfg.RuntimeParams["synchronous_commit"] = "off"
	// Every connection of the run bears its name; the keeper's tells
	// other runs that this one is alive.
	cfg.RuntimeParams["application_name"] = run
	s.keeper, err = pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("postgres: connect: %w", err)
	}
	// The keeper idles most of the run: a server that ends idle sessions
	// would make the run look gone (PostgreSQL 14 and later; an older
	// server has no such setting and answers an error, ignored).
	_, _ = s.keeper.Exec(ctx, "SET idle_session_timeout = 0")
	if err := s.open(ctx, cfg); err != nil {
		_ = s.Close()
		return nil, err
	}
	return s, nil
}

// pgSession is one run on PostgreSQL.
type pgSession struct {
	// run names the run; tmpl and work are its databases.
	run, tmpl, work string
	// keeper is connected to the DSN's database for the whole run: it
	// makes and drops the run's databases, and its name tells that the
	// run is alive.
	keeper *pgx.Conn
	// admin is the harness's handle on the scenarios' database.
	admin *sql.DB
	// clockCfg connects the clock's connection (and, with another
	// database, the handles the team's schema runs on); workers, the
	// workers'.
	clockCfg *pgx.ConnConfig
	workers  driver.Connector
	// dsn is the DSN the run was started with, workerCfg the workers'
	// configuration: a pgx consumer's pools are made from them (see
	// PgxConfig).
	dsn       string
	workerCfg *pgx.ConnConfig
	// fast: the role may reset the state in place and watch for DDL
	// (a superuser); otherwise every scenario gets a new copy.
	fast bool

	// doMu lets one do run at a time; over is set once the session is
	// closed, when do refuses.
	doMu sync.Mutex
	over bool

	mu   sync.Mutex
	idle []*pgConn
	// rawIdle are the sessions pgx connections give back (see pgxDial),
	// rawResets numbers their resets.
	rawIdle   []*rawConn
	rawResets atomic.Uint64
	closed    bool
	refused   *Refused
	// refusals caches the verdict on each statement a worker ran, paths
	// whether it sets a search_path of its own.
	refusals sync.Map // string -> verdict
	paths    sync.Map // string -> bool

	// prepared is set once the team's schema ran on the scenarios'
	// database, failed once it failed there; templated once the template
	// has the schema too.
	prepared, failed, templated bool
	// reset is the script that restores the state the schema left, in
	// one round trip; vacuum vacuums the team's tables every vacuumEvery
	// resets.
	reset, vacuum string
	resets        int
	// copyEvery: every scenario gets a new copy of the template (the
	// role is not a superuser, or the schema left large objects).
	copyEvery bool
	// copies counts the copies of the template made, undos the
	// scenarios whose DDL undo took away.
	copies, undos int
	// unseen: a worker ran DDL that no event trigger notes (on event
	// triggers themselves).
	unseen atomic.Bool

	// clockConn updates the clock table to clockAt.
	clockMu   sync.Mutex
	clockConn *pgx.Conn
	clockAt   time.Time
}

// do runs f on a goroutine outside every bubble, one call at a time: the
// scenarios' connections and databases are made there, since a connection
// made inside a synctest bubble could not be used from the next
// scenario's bubble.
func (s *pgSession) do(f func() error) error {
	s.doMu.Lock()
	defer s.doMu.Unlock()
	if s.over {
		return errors.New("postgres: the run is over")
	}
	var err error
	<-outside.Go(func() { err = f() })
	return err
}

// open makes the scenarios' database with the harness's schema, and the
// handles of the run's databases.
func (s *pgSession) open(ctx context.Context, cfg *pgx.ConnConfig) error {
	s.sweep(ctx)
	var super, createdb bool
	if err := s.keeper.QueryRow(ctx, `SELECT current_setting('is_superuser') = 'on', rolcreatedb FROM pg_catalog.pg_roles WHERE rolname = current_user`).Scan(&super, &createdb); err != nil {
		return fmt.Errorf("postgres: read the role's rights: %w", err)
	}
	if !super && !createdb {
		return fmt.Errorf("postgres: the role %s may not create databases, and every run gets databases of its own: give it CREATEDB (ALTER ROLE %s CREATEDB)", cfg.User, ident(cfg.User))
	}
	s.fast = super
	// public first (the team's unqualified names go there), then the
	// harness's clock functions, then the server's.
	searchPath := "public, " + harnessSchema + ", pg_catalog"
	adminCfg := cfg.Copy()
	adminCfg.Database = s.work
	adminCfg.RuntimeParams["search_path"] = searchPath
	// The harness's own statements run in the simple protocol: no
	// statement cache to go stale when a scenario changes the schema.
	adminCfg.DefaultQueryExecMode = pgx.QueryExecModeSimpleProtocol
	s.clockCfg = adminCfg
	s.admin = sql.OpenDB(stdlib.GetConnector(*adminCfg))
	s.admin.SetMaxIdleConns(2)
	workerCfg := cfg.Copy()
	workerCfg.Database = s.work
	workerCfg.RuntimeParams["search_path"] = searchPath
	workerCfg.RuntimeParams["lock_timeout"] = fmt.Sprintf("%dms", LockWait.Milliseconds())
	s.workers = stdlib.GetConnector(*workerCfg)
	s.workerCfg = workerCfg
	return s.makeWork()
}

// openSetup opens a handle on database name whose statements are
// screened (see Refused): the team's schema runs on it.
func (s *pgSession) openSetup(name string) *sql.DB {
	cfg := s.clockCfg.Copy()
	cfg.Database = name
	return sql.OpenDB(screenConnector{Connector: stdlib.GetConnector(*cfg)})
}

// vacuumEvery is how many scenarios run between two vacuums of the team's
// tables. Autovacuum is off on them: its lock (to truncate a table's empty
// end) would make a worker wait at a moment no schedule decides.
const vacuumEvery = 200

func (s *pgSession) Name() string { return "postgres" }

// Database is the name of the scenarios' database.
func (s *pgSession) Database() string { return s.work }

func (s *pgSession) Fresh(context.Context) (Database, error) {
	return &pgDB{s: s}, nil
}

// beginSQL is the BEGIN of opts, as pgx's database/sql driver writes it.
func beginSQL(opts driver.TxOptions) (string, error) {
	b := "BEGIN"
	switch sql.IsolationLevel(opts.Isolation) {
	case sql.LevelDefault:
	case sql.LevelReadUncommitted:
		b += " ISOLATION LEVEL READ UNCOMMITTED"
	case sql.LevelReadCommitted:
		b += " ISOLATION LEVEL READ COMMITTED"
	case sql.LevelRepeatableRead, sql.LevelSnapshot:
		b += " ISOLATION LEVEL REPEATABLE READ"
	case sql.LevelSerializable:
		b += " ISOLATION LEVEL SERIALIZABLE"
	default:
		return "", fmt.Errorf("unsupported isolation: %v", opts.Isolation)
	}
	if opts.ReadOnly {
		b += " READ ONLY"
	}
	return b, nil
}

// Close closes the run's connections and drops its databases.
func (s *pgSession) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	idle := s.idle
	s.idle = nil
	s.mu.Unlock()
	s.doMu.Lock()
	s.over = true
	s.doMu.Unlock()
	for _, c := range idle {
		_ = c.raw.Close()
	}
	s.closeRaw()
	if s.clockConn != nil {
		_ = s.clockConn.Close(context.Background())
	}
	if s.admin != nil {
		_ = s.admin.Close()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := s.dropDatabases(ctx, s.work, s.tmpl)
	if cerr := s.keeper.Close(ctx); err == nil {
		err = cerr
	}
	return err
}

// get lends a pooled connection, dialling one when none is idle.
func (s *pgSession) get() (*pgConn, error) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, errors.New("postgres: the run is over")
	}
	if n := len(s.idle); n > 0 {
		c := s.idle[n-1]
		s.idle = s.idle[:n-1]
		s.mu.Unlock()
		return c, nil
	}
	s.mu.Unlock()
	var c driver.Conn
	err := s.do(func() (err error) {
		c, err = s.workers.Connect(context.Background())
		return err
	})
	if err != nil {
		return nil, err
	}
	return &pgConn{s: s, raw: c.(*stdlib.Conn)}, nil
}

// putScript resets a connection's session as the server does for a new
// one (DISCARD ALL, but for the statements pgx has prepared): RESET ALL
// leaves the session's authorization and role alone.
const putScript = "CLOSE ALL; SET SESSION AUTHORIZATION DEFAULT; RESET ROLE; RESET ALL; UNLISTEN *; DISCARD TEMP; DISCARD SEQUENCES; " +
	"SELECT pg_catalog.pg_advisory_unlock_all(); SELECT name FROM pg_catalog.pg_prepared_statements WHERE from_sql"

// put takes a connection back: its transaction rolled back, its session
// reset, as a server does for a connection that dies.
func (s *pgSession) put(c *pgConn) {
	pc := c.raw.Conn().PgConn()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if c.broken || pc.IsClosed() || resetSession(ctx, pc) != nil {
		_ = c.raw.Close()
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		_ = c.raw.Close()
		return
	}
	s.idle = append(s.idle, c)
}

// resetSession rolls pc back and resets its session, deallocating the
// statements the team prepared with PREPARE (pgx's own stay: they are
// the same statements on the same schema).
func resetSession(ctx context.Context, pc *pgconn.PgConn) error {
	script := putScript
	if pc.TxStatus() != 'I' {
		script = "ROLLBACK; " + script
	}
	res, err := pc.Exec(ctx, script).ReadAll()
	if err != nil {
		return err
	}
	for _, row := range res[len(res)-1].Rows {
		if err := pc.Exec(ctx, "DEALLOCATE "+ident(string(row[0]))).Close(); err != nil {
			return err
		}
	}
	return nil
}

// adminExec runs a script of several statements on the admin handle in
// the simple protocol.
func (s *pgSession) adminExec(ctx context.Context, script string) error {
	return rawExec(ctx, s.admin, script)
}

// rawExec runs a script of several statements on one of db's connections
// in the simple protocol, and leaves no transaction open when it fails.
func rawExec(ctx context.Context, db *sql.DB, script string) error {
	conn, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	return conn.Raw(func(dc any) error {
		var pc *pgconn.PgConn
		switch c := dc.(type) {
		case *stdlib.Conn:
			pc = c.Conn().PgConn()
		case *screenConn:
			pc = c.Conn.Conn().PgConn()
		}
		err := pc.Exec(ctx, script).Close()
		if err != nil && pc.TxStatus() != 'I' {
			_ = pc.Exec(ctx, "ROLLBACK").Close()
		}
		return err
	})
}

// prepare brings the scenarios' database to the state the team's schema
// leaves: the first time, by running it there; later, by resetting the
// state, or by copying the template (see renew).
func (s *pgSession) prepare(ctx context.Context, run func(*sql.DB) error) error {
	if r := s.refusal(); r != nil {
		return fmt.Errorf("postgres: a worker ran a statement the harness refuses: %w", r)
	}
	if !s.prepared {
		return s.first(ctx, run)
	}
	if s.copyEvery {
		return s.renew(ctx, run)
	}
	if s.unseen.Load() {
		// DDL no event trigger sees (see pgConn.screen).
		s.unseen.Store(false)
		return s.renew(ctx, run)
	}
	err := s.adminExec(ctx, s.reset)
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == schemaChanged {
		if !s.undo(ctx) {
			return s.renew(ctx, run)
		}
		err = s.adminExec(ctx, s.reset)
	}
	if err != nil {
		return fmt.Errorf("postgres: reset the schema's state: %w", err)
	}
	if s.resets++; s.vacuum != "" && s.resets%vacuumEvery == 0 {
		if _, err := s.admin.ExecContext(ctx, s.vacuum); err != nil {
			return fmt.Errorf("postgres: vacuum the schema's tables: %w", err)
		}
	}
	return nil
}

// refusal is the first statement a worker ran that was refused.
func (s *pgSession) refusal() *Refused {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.refused
}

// first runs the team's schema on the scenarios' database, and reads what
// it made.
func (s *pgSession) first(ctx context.Context, run func(*sql.DB) error) error {
	if s.failed {
		// Start over from a database with nothing of the team's.
		if err := s.do(s.makeWork); err != nil {
			return err
		}
	}
	s.failed = true
	if err := s.runSchema(ctx, s.work, run); err != nil {
		return err
	}
	s.prepared, s.failed = true, false
	return nil
}

// renew gives the scenarios a new copy of the template. The template is
// made the first time it is needed (most runs never need one): the team's
// schema runs again there.
func (s *pgSession) renew(ctx context.Context, run func(*sql.DB) error) error {
	if !s.templated {
		if err := s.do(s.makeTemplate); err != nil {
			return err
		}
		if err := s.runSchema(ctx, s.tmpl, run); err != nil {
			return fmt.Errorf("postgres: the schema, run again on the run's template: %w", err)
		}
		s.templated = true
	}
	s.copies++
	return s.do(s.copyTemplate)
}

// runSchema runs the team's schema on database name, screened, and reads
// what it made (see discover).
func (s *pgSession) runSchema(ctx context.Context, name string, run func(*sql.DB) error) error {
	var setup *sql.DB
	if err := s.do(func() error { setup = s.openSetup(name); return nil }); err != nil {
		return err
	}
	// The handle's connections are made here, maybe in this scenario's
	// bubble: they must not outlive it.
	defer setup.Close()
	if err := run(setup); err != nil {
		return err
	}
	if err := s.discover(ctx, setup); err != nil {
		return fmt.Errorf("postgres: read the schema's tables from the catalog: %w", err)
	}
	return nil
}

// syncClock brings the clock table to now, when it is not there yet.
func (s *pgSession) syncClock(now time.Time) error {
	s.clockMu.Lock()
	defer s.clockMu.Unlock()
	if now.Equal(s.clockAt) {
		return nil
	}
	// No deadline: nothing else writes the clock's row, so the update
	// never waits for a lock.
	sql := fmt.Sprintf("UPDATE %s.clock SET now = %s", harnessSchema, pgTime(now))
	if err := s.clockConn.PgConn().Exec(context.Background(), sql).Close(); err != nil {
		return fmt.Errorf("postgres: move the scenario's clock: %w", err)
	}
	s.clockAt = now
	return nil
}

// pgTime is t as a PostgreSQL timestamptz literal.
func pgTime(t time.Time) string { return pgTimeText(t) + "::timestamptz" }

// pgTimeText is t as a PostgreSQL string literal, ISO 8601 with its
// offset, which reads back the same whatever the session's DateStyle.
func pgTimeText(t time.Time) string {
	return "'" + t.UTC().Format("2006-01-02 15:04:05.000000-07") + "'"
}

// ident quotes a name.
func ident(name string) string { return pgx.Identifier{name}.Sanitize() }

// pgDB is one scenario's database: the run's scenarios' database, reset
// or copied again from the template.
type pgDB struct {
	s     *pgSession
	mu    sync.Mutex
	conns []*pgConn
	clock func() time.Time
	// readsClock is set once the scenario's schema or a statement calls a
	// clock function: until then the clock table need not move.
	readsClock atomic.Bool
}

// SetClock implements Clocked.
func (d *pgDB) SetClock(now func() time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.clock = now
}

// now is the scenario's time.
func (d *pgDB) now() time.Time {
	d.mu.Lock()
	f := d.clock
	d.mu.Unlock()
	if f == nil {
		return Epoch
	}
	return f()
}

// Rewrite implements Clocked. The harness rewrites the schema, then each
// statement before it runs: a clock function in any of them makes the
// clock table follow the scenario's time from then on. A statement that
// sets a search_path of its own is named: under it, pg_catalog's clock
// functions come first.
func (d *pgDB) Rewrite(query string) (string, []string) {
	if sqlclock.PostgresReadsClock(query) {
		d.readsClock.Store(true)
	}
	q, notes := sqlclock.Postgres(query)
	v, ok := d.s.paths.Load(query)
	if !ok {
		v, _ = d.s.paths.LoadOrStore(query, setsSearchPath(query))
	}
	if v.(bool) {
		notes = append(notes, "a search_path the statement sets (for the session, a transaction or a function): "+
			"under it, pg_catalog's now() and the other clock functions come before the harness's, unless it names "+
			harnessSchema+" before pg_catalog")
	}
	return q, notes
}

// ArgNotes implements Clocked.
func (d *pgDB) ArgNotes(args []driver.NamedValue) []string { return sqlclock.ArgNotes(true, args) }

func (d *pgDB) Admin() *sql.DB { return d.s.admin }

// Prepare implements Preparer.
func (d *pgDB) Prepare(ctx context.Context, run func(*sql.DB) error) error {
	return d.s.prepare(ctx, run)
}

func (d *pgDB) Open() (driver.Conn, error) {
	c, err := d.s.get()
	if err != nil {
		return nil, err
	}
	c.db = d
	d.mu.Lock()
	d.conns = append(d.conns, c)
	d.mu.Unlock()
	return c, nil
}

// IsBusy recognises a lock timeout (SQLSTATE 55P03, lock_not_available).
func (d *pgDB) IsBusy(err error) bool { return isLockTimeout(err) }

var _ Deadlocker = (*pgDB)(nil)

// DeadlockAnswer implements Deadlocker.
func (d *pgDB) DeadlockAnswer() string {
	return "PostgreSQL's detector answers error 40P01 (deadlock_detected) and aborts the transaction"
}

// Deadlock answers a statement given up in a deadlock between workers as
// PostgreSQL's detector would: error 40P01, the transaction aborted. The
// workers run with a lock timeout far shorter than deadlock_timeout, so
// the server never sees the cycle itself: the statement's wait ended in
// a lock timeout, rolled back to its savepoint, and the transaction is
// still open until here. Should the answer fail otherwise, the statement
// keeps its lock timeout.
func (c *pgConn) Deadlock(busy error) error {
	err := c.simple(deadlockRaise)
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == "40P01" {
		return err
	}
	return busy
}

// lastWait is a lock timeout that left no transaction to retry in: the
// handler gets it (its SQLState is 55P03), the scheduler does not park on
// it.
type lastWait struct{ err error }

func (e lastWait) Error() string { return e.err.Error() }

// SQLState returns the SQLSTATE of the lock timeout.
func (e lastWait) SQLState() string {
	var pe *pgconn.PgError
	if errors.As(e.err, &pe) {
		return pe.Code
	}
	return ""
}

func isLockTimeout(err error) bool {
	var pe *pgconn.PgError
	// 55P03 is also the error of NOWAIT, which the team meant: only the
	// lock timeout is a wait.
	return errors.As(err, &pe) && pe.Code == "55P03" && strings.Contains(pe.Message, "lock timeout")
}

// Close gives back the connections the scenario still holds.
func (d *pgDB) Close() error {
	d.mu.Lock()
	conns := d.conns
	d.conns = nil
	d.mu.Unlock()
	for _, c := range conns {
		c.release()
	}
	return nil
}

// othersInTx reports whether a connection of the scenario other than c is
// inside a transaction: only then can c's statement meet a lock.
func (d *pgDB) othersInTx(c *pgConn) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, o := range d.conns {
		if o != c && o.raw.Conn().PgConn().TxStatus() != 'I' {
			return true
		}
	}
	return false
}

func (d *pgDB) forget(c *pgConn) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	for i, o := range d.conns {
		if o == c {
			d.conns = append(d.conns[:i], d.conns[i+1:]...)
			return true
		}
	}
	return false
}

// pgConn is a pooled worker connection lent to one scenario. Statements
// inside a transaction, while another connection is inside one too, run
// under a savepoint: a lock timeout rolls back to it and leaves the team's
// transaction as it was, so that the statement can be run again when the
// scheduler retries it. Queries read their rows in full before returning,
// so that a lock timeout is the query's error, never a row's.
type pgConn struct {
	s      *pgSession
	db     *pgDB
	raw    *stdlib.Conn
	broken bool
}

var (
	_ driver.Conn               = (*pgConn)(nil)
	_ driver.ConnBeginTx        = (*pgConn)(nil)
	_ driver.ExecerContext      = (*pgConn)(nil)
	_ driver.QueryerContext     = (*pgConn)(nil)
	_ driver.ConnPrepareContext = (*pgConn)(nil)
	_ driver.SessionResetter    = (*pgConn)(nil)
	_ driver.Validator          = (*pgConn)(nil)
)

func (c *pgConn) release() {
	if c.db != nil && c.db.forget(c) {
		c.db = nil
		c.s.put(c)
	}
}

// Close gives the connection back to the run's pool, rolled back.
func (c *pgConn) Close() error {
	c.release()
	return nil
}

func (c *pgConn) Prepare(query string) (driver.Stmt, error) {
	return c.PrepareContext(context.Background(), query)
}

// PrepareContext returns a statement that runs query through the
// connection (pgx caches its prepared form).
func (c *pgConn) PrepareContext(_ context.Context, query string) (driver.Stmt, error) {
	return &connStmt{c: c, query: query}, nil
}

func (c *pgConn) Begin() (driver.Tx, error) {
	return c.BeginTx(context.Background(), driver.TxOptions{})
}

// BeginTx begins a transaction and records its start, the scenario's
// time, for now() (one round trip: BEGIN and set_config together).
func (c *pgConn) BeginTx(_ context.Context, opts driver.TxOptions) (driver.Tx, error) {
	begin, err := beginSQL(opts)
	if err != nil {
		return nil, err
	}
	if c.raw.Conn().IsClosed() {
		return nil, driver.ErrBadConn
	}
	now := Epoch
	if c.db != nil {
		now = c.db.now()
	}
	if err := c.simple(begin + "; SELECT pg_catalog.set_config('idemcheck.tx_now', " + pgTimeText(now) + ", true)"); err != nil {
		return nil, err
	}
	return pgTx{c}, nil
}

// pgTx ends a transaction pgConn began.
type pgTx struct{ c *pgConn }

func (t pgTx) Commit() error   { return t.c.simple("COMMIT") }
func (t pgTx) Rollback() error { return t.c.simple("ROLLBACK") }

// syncClock brings the clock table to the scenario's time before a
// statement, once the scenario reads the clock at all.
func (c *pgConn) syncClock() error {
	if c.db == nil || !c.db.readsClock.Load() {
		return nil
	}
	return c.s.syncClock(c.db.now())
}

// noteErr marks the connection broken after a network error.
func (c *pgConn) noteErr(err error) {
	if err != nil && c.raw.Conn().PgConn().IsClosed() {
		c.broken = true
	}
}

func (c *pgConn) simple(script string) error {
	err := c.raw.Conn().PgConn().Exec(context.Background(), script).Close()
	c.noteErr(err)
	return err
}

// underSavepoint reports whether the next statement needs the savepoint,
// and sets it.
func (c *pgConn) underSavepoint() (bool, error) {
	if c.raw.Conn().PgConn().TxStatus() != 'T' || c.db == nil || !c.db.othersInTx(c) {
		return false, nil
	}
	return true, c.simple("SAVEPOINT " + waitSavepoint)
}

// endSavepoint releases the savepoint after a statement that returned err:
// a lock timeout is rolled back to it, so the transaction goes on.
func (c *pgConn) endSavepoint(sp bool, err error) error {
	switch {
	case !sp && isLockTimeout(err) && c.raw.Conn().PgConn().TxStatus() == 'E':
		// A wait with no savepoint (a session-level advisory lock another
		// connection holds outside a transaction): the transaction is
		// aborted, as under a real lock timeout, and retrying is no use.
		return lastWait{err}
	case !sp:
		return err
	case err == nil:
		return c.simple("RELEASE SAVEPOINT " + waitSavepoint)
	case isLockTimeout(err):
		if rerr := c.simple("ROLLBACK TO SAVEPOINT " + waitSavepoint + "; RELEASE SAVEPOINT " + waitSavepoint); rerr != nil {
			return rerr
		}
	}
	return err
}

// isTxEnd reports whether query ends the transaction, and whether it
// commits: COMMIT or END, ROLLBACK or ABORT, with WORK or TRANSACTION and
// AND [NO] CHAIN, whatever the case, the comments and a closing
// semicolon. It runs outside the savepoint a wait is retried under, which
// would not outlive it. ROLLBACK TO SAVEPOINT and the PREPARED forms do
// not end the transaction in progress.
func isTxEnd(query string) (end, commit bool) {
	w := sqlscan.Significant(query)
	for len(w) > 0 && w[len(w)-1].Kind == sqlscan.Semicolon {
		w = w[:len(w)-1]
	}
	if len(w) == 0 {
		return false, false
	}
	for _, t := range w[1:] {
		if !t.Is("work") && !t.Is("transaction") && !t.Is("and") && !t.Is("no") && !t.Is("chain") {
			return false, false
		}
	}
	switch {
	case w[0].Is("commit"), w[0].Is("end"):
		return true, true
	case w[0].Is("rollback"), w[0].Is("abort"):
		return true, false
	}
	return false, false
}

// verdict is what screen found in a statement, read once per statement.
type verdict struct {
	refused *Refused
	// unseen: DDL on an event trigger, which no event trigger notes.
	unseen bool
	// end: the statement ends the transaction; commit: it commits it
	// (see isTxEnd).
	end, commit bool
}

// verdictOf reads a statement (see verdict).
func verdictOf(query string) verdict {
	end, commit := isTxEnd(query)
	return verdict{refused: refusal(query), unseen: onEventTrigger(query), end: end, commit: commit}
}

// screen refuses a statement that makes or changes something of the
// whole server (see Refused), and records it: the run's next scenario
// does not start. It also notes DDL on event triggers, which the event
// triggers that watch for DDL do not see. It returns the statement's
// verdict.
func (c *pgConn) screen(ctx context.Context, query string) (verdict, error) {
	v, ok := c.s.refusals.Load(query)
	if !ok {
		v, _ = c.s.refusals.LoadOrStore(query, verdictOf(query))
	}
	r := v.(verdict)
	if r.unseen {
		c.s.unseen.Store(true)
	}
	if err := screen(ctx, c.raw, query, r.refused); err != nil {
		c.s.mu.Lock()
		if c.s.refused == nil {
			c.s.refused = r.refused
		}
		c.s.mu.Unlock()
		return r, err
	}
	return r, nil
}

func (c *pgConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	v, err := c.screen(ctx, query)
	if err != nil {
		return nil, err
	}
	if v.end {
		res, err := c.raw.ExecContext(ctx, query, args)
		c.noteErr(err)
		if v.commit && isLockTimeout(err) {
			// The transaction is gone: this is no wait to retry.
			err = lastWait{err}
		}
		return res, err
	}
	if err := c.syncClock(); err != nil {
		return nil, err
	}
	sp, err := c.underSavepoint()
	if err != nil {
		return nil, err
	}
	res, err := c.raw.ExecContext(ctx, query, args)
	c.noteErr(err)
	if err = c.endSavepoint(sp, err); err != nil {
		return nil, err
	}
	return res, nil
}

func (c *pgConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	if _, err := c.screen(ctx, query); err != nil {
		return nil, err
	}
	if err := c.syncClock(); err != nil {
		return nil, err
	}
	sp, err := c.underSavepoint()
	if err != nil {
		return nil, err
	}
	var buf *bufRows
	rows, err := c.raw.QueryContext(ctx, query, args)
	if err == nil {
		buf, err = readAll(rows)
	}
	c.noteErr(err)
	if err = c.endSavepoint(sp, err); err != nil {
		return nil, err
	}
	return buf, nil
}

func (c *pgConn) ResetSession(ctx context.Context) error { return c.raw.ResetSession(ctx) }

func (c *pgConn) IsValid() bool { return !c.broken && !c.raw.Conn().IsClosed() }

// readAll reads rows in full and closes them.
func readAll(rows driver.Rows) (*bufRows, error) {
	b := &bufRows{cols: rows.Columns()}
	for {
		dest := make([]driver.Value, len(b.cols))
		err := rows.Next(dest)
		if err == io.EOF {
			break
		}
		if err != nil {
			rows.Close()
			return nil, err
		}
		for i, v := range dest {
			if bs, ok := v.([]byte); ok {
				dest[i] = append([]byte(nil), bs...)
			}
		}
		b.rows = append(b.rows, dest)
	}
	if err := rows.Close(); err != nil {
		return nil, err
	}
	return b, nil
}

// bufRows are rows read in full.
type bufRows struct {
	cols []string
	rows [][]driver.Value
}

func (b *bufRows) Columns() []string { return b.cols }
func (b *bufRows) Close() error      { return nil }
func (b *bufRows) Next(dest []driver.Value) error {
	if len(b.rows) == 0 {
		return io.EOF
	}
	copy(dest, b.rows[0])
	b.rows = b.rows[1:]
	return nil
}

// queryConn is a connection a statement runs its query through: the
// PostgreSQL and MySQL backends' connections prepare nothing on the server.
type queryConn interface {
	ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error)
	QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error)
}

// connStmt is a prepared statement that runs its query through the
// connection each time.
type connStmt struct {
	c     queryConn
	query string
}

var (
	_ driver.StmtExecContext  = (*connStmt)(nil)
	_ driver.StmtQueryContext = (*connStmt)(nil)
)

func (s *connStmt) Close() error  { return nil }
func (s *connStmt) NumInput() int { return -1 }

func (s *connStmt) Exec(args []driver.Value) (driver.Result, error) {
	return s.ExecContext(context.Background(), toNamed(args))
}

func (s *connStmt) Query(args []driver.Value) (driver.Rows, error) {
	return s.QueryContext(context.Background(), toNamed(args))
}

func (s *connStmt) ExecContext(ctx context.Context, args []driver.NamedValue) (driver.Result, error) {
	return s.c.ExecContext(ctx, s.query, args)
}

func (s *connStmt) QueryContext(ctx context.Context, args []driver.NamedValue) (driver.Rows, error) {
	return s.c.QueryContext(ctx, s.query, args)
}

func toNamed(args []driver.Value) []driver.NamedValue {
	out := make([]driver.NamedValue, len(args))
	for i, v := range args {
		out[i] = driver.NamedValue{Ordinal: i + 1, Value: v}
	}
	return out
}
