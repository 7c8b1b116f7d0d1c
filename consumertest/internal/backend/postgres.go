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

	"github.com/idemcheck/idemcheck/consumertest/internal/sqlclock"
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
// A run (one Check, Hunt or Replay) gets a schema of its own, named
// idemcheck_c<pid>_<n>_<random>, dropped when the run ends; every
// connection has it as search_path. The team's schema runs once, in the
// run's first scenario; the harness then reads from the catalog the tables
// and sequences it made and the rows it seeded, and resets the state at the
// start of every later scenario (delete every row, put the seeded rows
// back, set the sequences back) instead of creating it again.
//
// Connections are pooled across the scenarios of a run: a worker's
// connection that closes (a worker that stops, or crashes) is rolled back,
// its session settings are reset (RESET ALL) and its advisory locks
// released, synchronously, before another worker gets it.
//
// Lock waits: every worker connection runs with lock_timeout = LockWait.
// See LockWait and IsBusy.
//
// Clock: the run's schema defines now(), transaction_timestamp(),
// statement_timestamp(), clock_timestamp() and timeofday(), and every
// connection's search_path is the run's schema, then pg_catalog, so that
// they are found before the server's own (pg_catalog is searched first
// unless the path names it). They read the scenario's time from a table
// of the harness, <seed schema>.clock, outside the run's schema (so the
// reset never touches it), which the harness updates, on a connection of
// its own, before a worker's statement when the scenario's time has moved;
// now() and transaction_timestamp() read the time the transaction began,
// which BEGIN records (set_config('idemcheck.tx_now', ..., true), in the
// same round trip). The SQL standard's keywords (CURRENT_TIMESTAMP, ...)
// are rewritten into calls of now() by consumertest/internal/sqlclock, in the schema
// too, so that column defaults follow the scenario's clock. Inside a
// REPEATABLE READ or SERIALIZABLE transaction, statement_timestamp() and
// clock_timestamp() read the clock as the transaction's snapshot has it.
type Postgres struct{ DSN string }

// Name implements Backend.
func (Postgres) Name() string { return "postgres" }

// Fresh implements Backend; a Postgres backend is used through Start.
func (Postgres) Fresh(context.Context) (Database, error) {
	return nil, errors.New("the postgres backend must be started first (Start)")
}

var pgRunSeq atomic.Int64

// Start implements Starter: it opens the run's schema and its admin
// handle. It must be called outside any testing/synctest bubble: the
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
	s := &pgSession{
		schema:  fmt.Sprintf("idemcheck_c%d_%d_%08x", os.Getpid(), pgRunSeq.Add(1), rand.Uint32()),
		dialReq: make(chan struct{}),
		dialRes: make(chan dialResult),
	}
	s.seed = s.schema + "_seed"
	s.clockAt = Epoch
	// A run's data need not survive a crash of the server: commits do not
	// wait for the write-ahead log to reach the disk.
	cfg.RuntimeParams["synchronous_commit"] = "off"
	// The run's schema first, then pg_catalog: the clock functions of the
	// run's schema come before the server's.
	searchPath := pgx.Identifier{s.schema}.Sanitize() + ", pg_catalog"
	adminCfg := cfg.Copy()
	adminCfg.RuntimeParams["search_path"] = searchPath
	// The harness's own statements run in the simple protocol: no
	// statement cache to go stale when the team's schema is dropped.
	adminCfg.DefaultQueryExecMode = pgx.QueryExecModeSimpleProtocol
	s.admin = sql.OpenDB(stdlib.GetConnector(*adminCfg))
	s.admin.SetMaxIdleConns(2)
	if err := s.adminExec(ctx, "CREATE SCHEMA "+pgx.Identifier{s.schema}.Sanitize()+"; "+s.clockScript()); err != nil {
		s.admin.Close()
		return nil, fmt.Errorf("postgres: create the run's schema: %w", err)
	}
	clockConn, err := pgx.ConnectConfig(ctx, adminCfg)
	if err != nil {
		_ = s.Close()
		return nil, fmt.Errorf("postgres: connect the clock's connection: %w", err)
	}
	s.clockConn = clockConn
	workerCfg := cfg.Copy()
	workerCfg.RuntimeParams["search_path"] = searchPath
	workerCfg.RuntimeParams["lock_timeout"] = fmt.Sprintf("%dms", LockWait.Milliseconds())
	connector := stdlib.GetConnector(*workerCfg)
	// Worker connections are dialled by a goroutine of their own, started
	// here: a connection made inside a synctest bubble could not be used
	// from the next scenario's bubble.
	go func() {
		for range s.dialReq {
			c, err := connector.Connect(context.Background())
			s.dialRes <- dialResult{c, err}
		}
	}()
	return s, nil
}

type dialResult struct {
	c   driver.Conn
	err error
}

// pgSession is one run on PostgreSQL.
type pgSession struct {
	schema, seed string
	admin        *sql.DB

	dialMu  sync.Mutex
	dialReq chan struct{}
	dialRes chan dialResult

	mu     sync.Mutex
	idle   []*pgConn
	closed bool

	// prepared is set once the team's schema ran and its tables were
	// read from the catalog; reset is the script that restores the state
	// the schema left.
	prepared bool
	reset    string
	// vacuum vacuums the team's tables, every vacuumEvery resets.
	vacuum string
	resets int

	// clockConn updates the clock table to clockAt.
	clockMu   sync.Mutex
	clockConn *pgx.Conn
	clockAt   time.Time
}

// clockScript makes the harness's clock table (in the seed schema) and
// the clock functions of the run's schema.
func (s *pgSession) clockScript() string {
	run, seed := pgx.Identifier{s.schema}.Sanitize(), pgx.Identifier{s.seed}.Sanitize()
	clock := seed + ".clock"
	return fmt.Sprintf(`CREATE SCHEMA IF NOT EXISTS %[2]s;
CREATE TABLE IF NOT EXISTS %[3]s (now timestamptz NOT NULL);
INSERT INTO %[3]s SELECT %[4]s WHERE NOT EXISTS (SELECT 1 FROM %[3]s);
CREATE FUNCTION %[1]s.statement_timestamp() RETURNS timestamptz LANGUAGE sql STABLE AS $$ SELECT c.now FROM %[3]s c $$;
CREATE FUNCTION %[1]s.clock_timestamp() RETURNS timestamptz LANGUAGE sql VOLATILE AS $$ SELECT c.now FROM %[3]s c $$;
CREATE FUNCTION %[1]s.now() RETURNS timestamptz LANGUAGE sql STABLE AS
  $$ SELECT coalesce(nullif(pg_catalog.current_setting('idemcheck.tx_now', true), '')::timestamptz, (SELECT c.now FROM %[3]s c)) $$;
CREATE FUNCTION %[1]s.transaction_timestamp() RETURNS timestamptz LANGUAGE sql STABLE AS $$ SELECT %[1]s.now() $$;
CREATE FUNCTION %[1]s.timeofday() RETURNS text LANGUAGE sql VOLATILE AS
  $$ SELECT pg_catalog.to_char(%[1]s.clock_timestamp(), 'Dy Mon DD HH24:MI:SS.US YYYY TZ') $$`,
		run, seed, clock, pgTime(Epoch))
}

// pgTime is t as a PostgreSQL timestamptz literal.
func pgTime(t time.Time) string { return pgTimeText(t) + "::timestamptz" }

// pgTimeText is t as a PostgreSQL string literal, ISO 8601 with its
// offset, which reads back the same whatever the session's DateStyle.
func pgTimeText(t time.Time) string {
	return "'" + t.UTC().Format("2006-01-02 15:04:05.000000-07") + "'"
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
	sql := fmt.Sprintf("UPDATE %s.clock SET now = %s", pgx.Identifier{s.seed}.Sanitize(), pgTime(now))
	if err := s.clockConn.PgConn().Exec(context.Background(), sql).Close(); err != nil {
		return fmt.Errorf("postgres: move the scenario's clock: %w", err)
	}
	s.clockAt = now
	return nil
}

// vacuumEvery is how many scenarios run between two vacuums of the team's
// tables. Autovacuum is off on them: its lock (to truncate a table's empty
// end) would make a worker wait at a moment no schedule decides.
const vacuumEvery = 200

func (s *pgSession) Name() string { return "postgres" }

// Schema is the name of the run's schema.
func (s *pgSession) Schema() string { return s.schema }

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

// Close closes the pooled connections and drops the run's schemas.
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
	close(s.dialReq)
	for _, c := range idle {
		_ = c.raw.Close()
	}
	if s.clockConn != nil {
		_ = s.clockConn.Close(context.Background())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := s.admin.ExecContext(ctx, fmt.Sprintf("DROP SCHEMA IF EXISTS %s CASCADE; DROP SCHEMA IF EXISTS %s CASCADE",
		pgx.Identifier{s.schema}.Sanitize(), pgx.Identifier{s.seed}.Sanitize()))
	if cerr := s.admin.Close(); err == nil {
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
	s.dialMu.Lock()
	defer s.dialMu.Unlock()
	s.dialReq <- struct{}{}
	r := <-s.dialRes
	if r.err != nil {
		return nil, r.err
	}
	return &pgConn{s: s, raw: r.c.(*stdlib.Conn)}, nil
}

// put takes a connection back: its transaction rolled back, its session
// reset, as a server does for a connection that dies.
func (s *pgSession) put(c *pgConn) {
	pc := c.raw.Conn().PgConn()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	script := "RESET ALL; DISCARD TEMP; DISCARD SEQUENCES; SELECT pg_advisory_unlock_all()"
	if pc.TxStatus() != 'I' {
		script = "ROLLBACK; " + script
	}
	if c.broken || pc.IsClosed() || pc.Exec(ctx, script).Close() != nil {
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

// adminExec runs a script of several statements on the admin handle in
// the simple protocol.
func (s *pgSession) adminExec(ctx context.Context, script string) error {
	conn, err := s.admin.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	return conn.Raw(func(dc any) error {
		return dc.(*stdlib.Conn).Conn().PgConn().Exec(ctx, script).Close()
	})
}

// prepare runs the team's schema on the first scenario and resets the
// state on the later ones.
func (s *pgSession) prepare(ctx context.Context, run func(*sql.DB) error) error {
	if s.prepared {
		if s.reset == "" {
			return nil
		}
		if err := s.adminExec(ctx, s.reset); err != nil {
			return fmt.Errorf("postgres: reset the schema's state: %w", err)
		}
		if s.resets++; s.vacuum != "" && s.resets%vacuumEvery == 0 {
			if _, err := s.admin.ExecContext(ctx, s.vacuum); err != nil {
				return fmt.Errorf("postgres: vacuum the schema's tables: %w", err)
			}
		}
		return nil
	}
	if err := run(s.admin); err != nil {
		// Start over from an empty schema (and the clock's functions)
		// next time.
		_ = s.adminExec(ctx, fmt.Sprintf("DROP SCHEMA IF EXISTS %[1]s CASCADE; CREATE SCHEMA %[1]s; ", pgx.Identifier{s.schema}.Sanitize())+s.clockScript())
		return err
	}
	reset, vacuum, err := s.discover(ctx)
	if err != nil {
		return fmt.Errorf("postgres: read the schema's tables from the catalog: %w", err)
	}
	s.prepared, s.reset, s.vacuum = true, reset, vacuum
	return nil
}

type pgTable struct {
	name string // schema-qualified, quoted
	cols string // the columns that take values (not generated), quoted
	rows bool
	// plain is false for a partitioned table.
	plain bool
}

// discover reads the tables and sequences the schema made, saves the rows
// it seeded into the seed schema, and returns the reset script.
func (s *pgSession) discover(ctx context.Context) (reset, vacuum string, err error) {
	rows, err := s.admin.QueryContext(ctx, `
SELECT c.relkind = 'r', quote_ident(n.nspname) || '.' || quote_ident(c.relname),
       coalesce((SELECT string_agg(quote_ident(a.attname), ', ' ORDER BY a.attnum) FROM pg_attribute a
                 WHERE a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped AND a.attgenerated = ''), '')
FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname = $1 AND c.relkind IN ('r', 'p') AND NOT c.relispartition
ORDER BY c.relname`, s.schema)
	if err != nil {
		return "", "", err
	}
	var tables []pgTable
	for rows.Next() {
		var t pgTable
		if err := rows.Scan(&t.plain, &t.name, &t.cols); err != nil {
			rows.Close()
			return "", "", err
		}
		tables = append(tables, t)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return "", "", err
	}
	var seqs []string
	srows, err := s.admin.QueryContext(ctx, `
SELECT quote_ident(n.nspname) || '.' || quote_ident(c.relname)
FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname = $1 AND c.relkind = 'S' ORDER BY c.relname`, s.schema)
	if err != nil {
		return "", "", err
	}
	for srows.Next() {
		var name string
		if err := srows.Scan(&name); err != nil {
			srows.Close()
			return "", "", err
		}
		seqs = append(seqs, name)
	}
	srows.Close()
	if err := srows.Err(); err != nil {
		return "", "", err
	}
	var restore []string
	for i := range tables {
		t := &tables[i]
		if err := s.admin.QueryRowContext(ctx, "SELECT EXISTS (SELECT 1 FROM "+t.name+")").Scan(&t.rows); err != nil {
			return "", "", err
		}
		if !t.rows || t.cols == "" {
			continue
		}
		seed := pgx.Identifier{s.seed, fmt.Sprintf("t%d", i)}.Sanitize()
		if _, err := s.admin.ExecContext(ctx, "CREATE SCHEMA IF NOT EXISTS "+pgx.Identifier{s.seed}.Sanitize()); err != nil {
			return "", "", err
		}
		if _, err := s.admin.ExecContext(ctx, fmt.Sprintf("CREATE TABLE %s AS SELECT %s FROM %s", seed, t.cols, t.name)); err != nil {
			return "", "", err
		}
		restore = append(restore, fmt.Sprintf("INSERT INTO %s (%s) OVERRIDING SYSTEM VALUE SELECT %s FROM %s", t.name, t.cols, t.cols, seed))
	}
	for _, q := range seqs {
		var last int64
		var called bool
		if err := s.admin.QueryRowContext(ctx, "SELECT last_value, is_called FROM "+q).Scan(&last, &called); err != nil {
			return "", "", err
		}
		restore = append(restore, fmt.Sprintf("SELECT setval('%s', %d, %t)", strings.ReplaceAll(q, "'", "''"), last, called))
	}
	var names []string
	for _, t := range tables {
		names = append(names, t.name)
		if t.plain {
			// A partitioned table takes no storage parameters.
			if _, err := s.admin.ExecContext(ctx, "ALTER TABLE "+t.name+" SET (autovacuum_enabled = false)"); err != nil {
				return "", "", err
			}
		}
	}
	if len(names) > 0 {
		vacuum = "VACUUM " + strings.Join(names, ", ")
	}
	if len(tables) == 0 && len(seqs) == 0 {
		return "", "", nil
	}
	var b strings.Builder
	b.WriteString("BEGIN; ")
	// Deleting is much faster than TRUNCATE on PostgreSQL for small tables
	// (no new files to create and sync); foreign keys and triggers are
	// switched off for the reset when the role may do so.
	if s.adminExec(ctx, "BEGIN; SET LOCAL session_replication_role = replica; ROLLBACK") == nil {
		b.WriteString("SET LOCAL session_replication_role = replica; ")
		for _, t := range tables {
			fmt.Fprintf(&b, "DELETE FROM %s; ", t.name)
		}
	} else if len(tables) > 0 {
		fmt.Fprintf(&b, "TRUNCATE %s CASCADE; ", strings.Join(names, ", "))
	}
	for _, r := range restore {
		b.WriteString(r + "; ")
	}
	b.WriteString("COMMIT")
	return b.String(), vacuum, nil
}

// pgDB is one scenario's database: the run's schema, reset.
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
// clock table follow the scenario's time from then on.
func (d *pgDB) Rewrite(query string) (string, []string) {
	if sqlclock.PostgresReadsClock(query) {
		d.readsClock.Store(true)
	}
	return sqlclock.Postgres(query)
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
	return &pgStmt{c: c, query: query}, nil
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

func isTxEnd(query string) (end, commit bool) {
	q := strings.ToUpper(strings.TrimSpace(query))
	return q == "COMMIT" || q == "ROLLBACK", q == "COMMIT"
}

func (c *pgConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	if end, commit := isTxEnd(query); end {
		res, err := c.raw.ExecContext(ctx, query, args)
		c.noteErr(err)
		if commit && isLockTimeout(err) {
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

// pgStmt runs its query through the connection.
type pgStmt struct {
	c     *pgConn
	query string
}

var (
	_ driver.StmtExecContext  = (*pgStmt)(nil)
	_ driver.StmtQueryContext = (*pgStmt)(nil)
)

func (s *pgStmt) Close() error  { return nil }
func (s *pgStmt) NumInput() int { return -1 }

func (s *pgStmt) Exec(args []driver.Value) (driver.Result, error) {
	return s.ExecContext(context.Background(), toNamed(args))
}

func (s *pgStmt) Query(args []driver.Value) (driver.Rows, error) {
	return s.QueryContext(context.Background(), toNamed(args))
}

func (s *pgStmt) ExecContext(ctx context.Context, args []driver.NamedValue) (driver.Result, error) {
	return s.c.ExecContext(ctx, s.query, args)
}

func (s *pgStmt) QueryContext(ctx context.Context, args []driver.NamedValue) (driver.Rows, error) {
	return s.c.QueryContext(ctx, s.query, args)
}

func toNamed(args []driver.Value) []driver.NamedValue {
	out := make([]driver.NamedValue, len(args))
	for i, v := range args {
		out[i] = driver.NamedValue{Ordinal: i + 1, Value: v}
	}
	return out
}
