package backend

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/idemcheck/idemcheck/internal/consumerharness/backend/sqlitebusy"
	"github.com/idemcheck/idemcheck/internal/consumerharness/sqlclock"
	"github.com/idemcheck/idemcheck/internal/sqlscan"
)

// SQLiteReuse is the SQLite backend for a run of many short scenarios (a
// model checker's search): one database for the whole run (a file, made
// and removed as SQLite's, with the same settings: see SQLite),
// brought back between scenarios to the state the team's schema left
// instead of being created and its schema run again; and worker
// connections pooled across scenarios, each keeping its prepared
// statements, so that a statement the handler runs again is not parsed
// again. Locking is the engine's, as with SQLite.
//
// The reset: in a rollback-journal mode, the file the schema made is
// written back (see writeFile), through a file description of the
// harness's own that also lets it read the file as the state's content
// (see ReadState); in WAL, every row is deleted and the rows
// the schema seeded put back, AUTOINCREMENT counters too. After the first
// reset the harness checks that it restored every table row for row,
// rowids included; when it did not (a trigger fired by the reset, a
// seeded row with a rowid of its own), every scenario gets a new database
// as with SQLite.
//
// A pooled connection that goes back to the pool is rolled back first, as
// a closed connection would be, and its busy timeout set back to the
// declared one; what else a handler set on its connection (another
// PRAGMA, a TEMP table) stays with it. A PRAGMA statement is never kept
// prepared: SQLite applies most of them (busy_timeout among them) when it
// compiles them.
type SQLiteReuse struct {
	// Params are the team's settings, as SQLite's.
	Params string
}

// Name implements Backend.
func (SQLiteReuse) Name() string { return "sqlite" }

// Fresh implements Backend; SQLiteReuse is used through Start.
func (SQLiteReuse) Fresh(context.Context) (Database, error) {
	return nil, errors.New("the reusing sqlite backend must be started first (Start)")
}

// Start implements Starter.
func (r SQLiteReuse) Start(ctx context.Context) (Session, error) {
	p, err := parseSQLiteParams(r.Params)
	if err != nil {
		return nil, err
	}
	key := dbSeq.Add(1)
	path := dbFile(key)
	s := &sqliteSession{dsn: fileDSN(path, p.open), params: p, rawParams: r.Params, key: key, path: path}
	// The admin handle keeps one connection open for the run, with its
	// prepared statements.
	s.admin = sql.OpenDB(adminConnector{s})
	s.admin.SetMaxIdleConns(1)
	s.admin.SetMaxOpenConns(1)
	if err := s.admin.PingContext(ctx); err != nil {
		s.admin.Close()
		removeDB(path)
		return nil, fmt.Errorf("sqlite: make the run's database %s: %w", path, err)
	}
	clocks.Store(key, func() time.Time { return Epoch })
	return s, nil
}

// sqliteSession is one run's database.
type sqliteSession struct {
	admin     *sql.DB
	dsn       string
	params    sqliteParams
	rawParams string
	// key names the database's clock (see SQLite).
	key  int64
	path string

	mu   sync.Mutex
	idle []*reuseConn

	prepared bool
	// fresh is set when a reset cannot restore the state: every scenario
	// gets a database of its own then.
	fresh bool
	reset []resetStep
	// baseline is what the schema made, and schemaVersion the schema's
	// version once the last reset was done (see dropAdded): a reset by
	// rows drops what a scenario created.
	baseline      map[string]schemaObject
	schemaVersion int64
	// file is the database file the schema made, written back by a
	// reset (nil: the reset deletes and inserts rows); cookie is the
	// schema cookie the last reset wrote.
	file   []byte
	cookie uint32
	// raw is the harness's own open file description of the database,
	// kept with file (nil: none): a reset writes through it, after
	// checking SQLite's locks itself, and a state's name reads the file
	// through it (see ReadState). rawFD is its descriptor.
	raw   *os.File
	rawFD int
}

// resetStep is a table to restore: its rows deleted, its seeded rows
// inserted again.
type resetStep struct {
	del    *sql.Stmt
	insert *sql.Stmt
	seeds  [][]any
}

func (s *sqliteSession) Name() string { return "sqlite" }

func (s *sqliteSession) Fresh(ctx context.Context) (Database, error) {
	if s.fresh {
		return SQLite{Params: s.rawParams}.Fresh(ctx)
	}
	return &reuseDB{s: s}, nil
}

func (s *sqliteSession) Close() error {
	s.mu.Lock()
	idle := s.idle
	s.idle = nil
	s.mu.Unlock()
	for _, c := range idle {
		c.closeRaw()
	}
	for _, r := range s.reset {
		r.del.Close()
		if r.insert != nil {
			r.insert.Close()
		}
	}
	clocks.Delete(s.key)
	var rerr error
	if s.raw != nil {
		rerr = s.raw.Close()
	}
	return errors.Join(s.admin.Close(), rerr, removeDB(s.path))
}

// get lends a pooled connection whose waits wait decides (nil: none),
// opening one when none is idle.
func (s *sqliteSession) get(wait func(time.Duration) bool) (*reuseConn, error) {
	s.mu.Lock()
	if n := len(s.idle); n > 0 {
		c := s.idle[n-1]
		s.idle = s.idle[:n-1]
		s.mu.Unlock()
		c.dead = false
		c.h.SetWait(wait)
		return c, nil
	}
	s.mu.Unlock()
	raw, h, err := openSQLite(s.dsn, s.params, wait)
	if err != nil {
		return nil, err
	}
	return &reuseConn{s: s, raw: raw, h: h, begin: s.params.begin, stmts: map[string]*cachedStmt{}}, nil
}

// put takes a connection back, rolled back, with no wait and the declared
// busy timeout (the handler may have set another).
func (s *sqliteSession) put(c *reuseConn) {
	c.h.SetWait(nil)
	if _, err := c.exec("ROLLBACK", nil); err != nil && !strings.Contains(err.Error(), "no transaction is active") {
		c.closeRaw()
		return
	}
	c.h.SetTimeout(s.params.busy)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.idle = append(s.idle, c)
}

// prepare runs the schema on the first scenario and restores its state on
// the later ones.
func (s *sqliteSession) prepare(ctx context.Context, run func(*sql.DB) error) error {
	if s.prepared && s.file != nil {
		// The file written back brings back the schema too.
		return s.restore(ctx)
	}
	if s.prepared {
		ok, err := s.dropAdded(ctx)
		if err != nil {
			return err
		}
		if ok {
			return s.restore(ctx)
		}
		// The scenario changed or dropped what the schema made: start
		// over from an empty database.
		if err := s.dropAll(ctx); err != nil {
			return err
		}
	}
	if err := run(s.admin); err != nil {
		return err
	}
	var err error
	if s.baseline, s.schemaVersion, err = readSchema(ctx, s.admin); err != nil {
		return fmt.Errorf("sqlite: read the schema: %w", err)
	}
	if err := s.keepFile(ctx); err != nil {
		return err
	}
	before, err := s.dump(ctx)
	if err != nil {
		return err
	}
	if err := s.discover(ctx); err != nil {
		return fmt.Errorf("sqlite: read the schema's tables: %w", err)
	}
	s.prepared = true
	if err := s.restore(ctx); err != nil {
		return err
	}
	after, err := s.dump(ctx)
	if err != nil {
		return err
	}
	if !reflect.DeepEqual(before, after) {
		// The reset does not restore this schema's state: new databases.
		s.fresh = true
	}
	return nil
}

// discover reads the tables and the rows the schema seeded.
func (s *sqliteSession) discover(ctx context.Context) error {
	names, err := s.tables(ctx)
	if err != nil {
		return err
	}
	for _, name := range names {
		q := quoteIdent(name)
		del, err := s.admin.PrepareContext(ctx, "DELETE FROM "+q)
		if err != nil {
			return err
		}
		step := resetStep{del: del}
		s.reset = append(s.reset, step)
		rows, err := s.admin.QueryContext(ctx, "SELECT * FROM "+q)
		if err != nil {
			return err
		}
		var cols []string
		if cols, step.seeds, err = readRows(rows); err != nil {
			return err
		}
		if len(step.seeds) > 0 {
			quoted := make([]string, len(cols))
			for i, c := range cols {
				quoted[i] = quoteIdent(c)
			}
			marks := strings.TrimSuffix(strings.Repeat("?, ", len(cols)), ", ")
			if step.insert, err = s.admin.PrepareContext(ctx, fmt.Sprintf("INSERT INTO %s (%s) VALUES (%s)", q, strings.Join(quoted, ", "), marks)); err != nil {
				return err
			}
		}
		s.reset[len(s.reset)-1] = step
	}
	return nil
}

// readRows reads every row of rows as its columns' values, and closes
// rows; it returns the columns' names too.
func readRows(rows *sql.Rows) (cols []string, out [][]any, err error) {
	defer rows.Close()
	if cols, err = rows.Columns(); err != nil {
		return nil, nil, err
	}
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return nil, nil, err
		}
		out = append(out, vals)
	}
	return cols, out, rows.Err()
}

// tables lists the tables to restore, sqlite_sequence last.
func (s *sqliteSession) tables(ctx context.Context) ([]string, error) {
	rows, err := s.admin.QueryContext(ctx, `SELECT name FROM sqlite_master WHERE type = 'table' AND (name NOT LIKE 'sqlite_%' OR name = 'sqlite_sequence') ORDER BY name = 'sqlite_sequence', name`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			return nil, err
		}
		out = append(out, n)
	}
	return out, rows.Err()
}

// restore brings the database back to the state the schema left: the
// file the schema made written back when there is one (see keepFile),
// else every row deleted and the seeded rows put back.
func (s *sqliteSession) restore(ctx context.Context) error {
	if s.file != nil {
		err := s.writeFile(ctx)
		if !errors.Is(err, errNotIdle) {
			return err
		}
		// A connection holds a lock: the statements below meet it, and
		// say so.
	}
	tx, err := s.admin.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("sqlite: reset the schema's state: %w", err)
	}
	defer tx.Rollback()
	for _, r := range s.reset {
		if _, err := tx.StmtContext(ctx, r.del).ExecContext(ctx); err != nil {
			return fmt.Errorf("sqlite: reset the schema's state: %w", err)
		}
		if r.insert == nil {
			continue
		}
		ins := tx.StmtContext(ctx, r.insert)
		for _, row := range r.seeds {
			if _, err := ins.ExecContext(ctx, row...); err != nil {
				return fmt.Errorf("sqlite: put the seeded rows back: %w", err)
			}
		}
	}
	return tx.Commit()
}

// dump reads every table with its rowids, to check a reset.
func (s *sqliteSession) dump(ctx context.Context) ([][]any, error) {
	names, err := s.tables(ctx)
	if err != nil {
		return nil, err
	}
	var out [][]any
	for _, name := range names {
		q := "SELECT rowid, * FROM " + quoteIdent(name) + " ORDER BY rowid"
		rows, err := s.admin.QueryContext(ctx, q)
		if err != nil {
			// A WITHOUT ROWID table.
			if rows, err = s.admin.QueryContext(ctx, "SELECT * FROM "+quoteIdent(name)); err != nil {
				return nil, err
			}
		}
		_, table, err := readRows(rows)
		if err != nil {
			return nil, err
		}
		slices.SortFunc(table, func(a, b []any) int { return strings.Compare(fmt.Sprint(a...), fmt.Sprint(b...)) })
		out = append(out, []any{name, table})
	}
	return out, nil
}

// keepFile keeps the file the schema made, for resets to write back: in a
// rollback-journal mode and without memory-mapped I/O, where an idle
// connection holds nothing of the file but its page cache, which SQLite
// checks against the file's change counter at every transaction. (In WAL
// the log and its index hold the state too: resets delete and insert.)
func (s *sqliteSession) keepFile(ctx context.Context) error {
	var mode string
	var mmap int64
	if err := s.admin.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode); err != nil {
		return fmt.Errorf("sqlite: read the schema's database: %w", err)
	}
	if err := s.admin.QueryRowContext(ctx, "PRAGMA mmap_size").Scan(&mmap); err != nil {
		return fmt.Errorf("sqlite: read the schema's database: %w", err)
	}
	if strings.EqualFold(mode, "wal") || mmap != 0 {
		return nil
	}
	b, err := os.ReadFile(s.path)
	if err != nil {
		return fmt.Errorf("sqlite: read the schema's database: %w", err)
	}
	if len(b) < 100 || string(b[:16]) != "SQLite format 3\x00" {
		return nil // an empty schema: nothing written yet
	}
	s.file, s.cookie = b, binary.BigEndian.Uint32(b[40:])
	if rawLocks && s.raw == nil {
		if f, err := os.OpenFile(s.path, os.O_RDWR, 0); err == nil {
			s.raw, s.rawFD = f, int(f.Fd())
		}
	}
	return nil
}

// dropRaw stops using the harness's own file description (its locks are
// not to be had here): resets and names ask the engine again.
func (s *sqliteSession) dropRaw() {
	if s.raw != nil {
		s.raw.Close()
		s.raw = nil
	}
}

// errNotIdle is writeFile's answer when a connection holds a lock on the
// database.
var errNotIdle = errors.New("sqlite: a connection holds a lock on the database")

// writeFile writes the file the schema made back over the database, while
// no connection holds a lock on it (the admin handle takes the EXCLUSIVE
// lock and gives it back first: nobody else has one). The change counter
// written is one past the file's: SQLite drops a connection's cached pages
// when the counter differs from the one it saw, so it must never come back
// to a value a connection may have seen since. The schema cookie likewise
// when a scenario changed the schema; else it stays, and connections keep
// the schema they read.
func (s *sqliteSession) writeFile(ctx context.Context) error {
	if s.raw != nil {
		done, err := s.writeRaw()
		if done || err != nil {
			return err
		}
	}
	if _, err := s.admin.ExecContext(ctx, "BEGIN EXCLUSIVE"); err != nil {
		if (&sqliteDB{}).IsBusy(err) {
			return errNotIdle
		}
		return fmt.Errorf("sqlite: reset the schema's state: %w", err)
	}
	if _, err := s.admin.ExecContext(ctx, "COMMIT"); err != nil {
		return fmt.Errorf("sqlite: reset the schema's state: %w", err)
	}
	// Closing f releases every POSIX lock this process holds on the file:
	// there is none (see above).
	f, err := os.OpenFile(s.path, os.O_RDWR, 0)
	if err != nil {
		return fmt.Errorf("sqlite: reset the schema's state: %w", err)
	}
	err = s.writeOver(f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("sqlite: reset the schema's state: %w", err)
	}
	return nil
}

// writeRaw is writeFile through the harness's own file description, with
// no statement run: it takes the write lock on every one of SQLite's lock
// bytes itself (which the engine's own locks, OFD or POSIX, conflict
// with), so that none can be held while the file is written, and gives it
// back after. A journal beside the database (a hot one the engine would
// roll back first, or one its journal mode keeps), or a database a
// handler made WAL, leaves the reset to writeFile's statements (false);
// so do locks it cannot take here.
func (s *sqliteSession) writeRaw() (bool, error) {
	ok, err := lockAll(s.rawFD)
	if err != nil {
		s.dropRaw()
		return false, nil
	}
	if !ok {
		if fileExists(s.path + "-wal") {
			// A handler made the database WAL: the statements decide.
			return false, nil
		}
		return false, errNotIdle
	}
	var hdr [20]byte
	if n, err := pread(s.rawFD, hdr[:]); err != nil || n < len(hdr) || !legacy(hdr[:]) || fileExists(s.path+"-journal") {
		return false, unlockAll(s.rawFD)
	}
	err = s.writeOver(s.raw)
	if uerr := unlockAll(s.rawFD); err == nil {
		err = uerr
	}
	if err != nil {
		return false, fmt.Errorf("sqlite: reset the schema's state: %w", err)
	}
	return true, nil
}

// legacy reports whether a database file's header says a rollback-journal
// mode (its read and write versions 1; WAL sets them to 2, and a handler
// may switch to WAL): the file alone is then the committed content.
func legacy(hdr []byte) bool { return hdr[18] == 1 && hdr[19] == 1 }

// writeOver writes the kept file over f with a new change counter, and a
// new schema cookie if the schema changed since the last reset.
func (s *sqliteSession) writeOver(f *os.File) error {
	var hdr [100]byte
	if _, err := f.ReadAt(hdr[:], 0); err != nil {
		return err
	}
	b := s.file
	counter := binary.BigEndian.Uint32(hdr[24:]) + 1
	binary.BigEndian.PutUint32(b[24:], counter)
	// The version-valid-for number: the header's page count holds.
	binary.BigEndian.PutUint32(b[92:], counter)
	if now := binary.BigEndian.Uint32(hdr[40:]); now != s.cookie {
		// A scenario changed the schema: a cookie no connection has seen,
		// so that every one reads the schema again.
		s.cookie = now + 1
	}
	binary.BigEndian.PutUint32(b[40:], s.cookie)
	if _, err := f.WriteAt(b, 0); err != nil {
		return err
	}
	return f.Truncate(int64(len(b)))
}

func quoteIdent(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }

// reuseDB is one scenario's view of the run's database.
type reuseDB struct {
	s *sqliteSession
}

func (d *reuseDB) Admin() *sql.DB { return d.s.admin }

// SetClock implements Clocked: the run's database has one clock, set by
// the scenario that uses it.
func (d *reuseDB) SetClock(now func() time.Time) { clocks.Store(d.s.key, now) }

// Rewrite implements Clocked.
func (d *reuseDB) Rewrite(query string) (string, []string) { return sqlclock.SQLite(query, d.s.key) }

// ArgNotes implements Clocked.
func (d *reuseDB) ArgNotes(args []driver.NamedValue) []string {
	return sqlclock.ArgNotes(false, args)
}

// Prepare implements Preparer.
func (d *reuseDB) Prepare(ctx context.Context, run func(*sql.DB) error) error {
	return d.s.prepare(ctx, run)
}

// Open implements Database: a connection that never waits (where the
// engine would wait for a lock, it answers busy at once, and the caller
// decides).
func (d *reuseDB) Open() (driver.Conn, error) { return d.s.get(nil) }

// OpenWaiting implements Waiter.
func (d *reuseDB) OpenWaiting(wait func(time.Duration) bool) (driver.Conn, error) {
	return d.s.get(wait)
}

func (d *reuseDB) IsBusy(err error) bool { return (&sqliteDB{}).IsBusy(err) }

// Close leaves the run's database as it is: the next scenario restores it.
func (d *reuseDB) Close() error { return nil }

// reuseConn is a pooled connection with its prepared statements.
type reuseConn struct {
	s   *sqliteSession
	raw driver.Conn
	// h is the connection's busy handler: put back before every call (a
	// PRAGMA busy_timeout replaces it when compiled; see sqlitebusy).
	h *sqlitebusy.Handler
	// begin begins a read-write transaction, as the driver would for the
	// declared _txlock.
	begin string
	stmts map[string]*cachedStmt
	dead  bool
	admin bool
}

// cachedStmt is a prepared statement; busy while its rows are open.
type cachedStmt struct {
	st   driver.Stmt
	busy bool
}

// maxCached bounds the statements a connection keeps.
const maxCached = 64

var (
	_ driver.Conn               = (*reuseConn)(nil)
	_ driver.ConnBeginTx        = (*reuseConn)(nil)
	_ driver.ExecerContext      = (*reuseConn)(nil)
	_ driver.QueryerContext     = (*reuseConn)(nil)
	_ driver.ConnPrepareContext = (*reuseConn)(nil)
)

// stmt returns the prepared statement of query and what gives it back.
func (c *reuseConn) stmt(query string) (driver.Stmt, func(), error) {
	c.h.Ensure()
	if cs, ok := c.stmts[query]; ok && !cs.busy {
		cs.busy = true
		return cs.st, func() { cs.busy = false }, nil
	}
	st, err := c.prepare(query)
	if err != nil {
		return nil, nil, err
	}
	if _, ok := c.stmts[query]; ok || len(c.stmts) >= maxCached || isPragma(query) {
		return st, func() { st.Close() }, nil
	}
	cs := &cachedStmt{st: st, busy: true}
	c.stmts[query] = cs
	return st, func() { cs.busy = false }, nil
}

func (c *reuseConn) exec(query string, args []driver.NamedValue) (driver.Result, error) {
	return c.ExecContext(context.Background(), query, args)
}

// prepare prepares query on the raw connection, with no context (see
// waitConn), and puts the busy handler back after (compiling a PRAGMA
// busy_timeout installs SQLite's).
func (c *reuseConn) prepare(query string) (driver.Stmt, error) {
	st, err := c.raw.(driver.ConnPrepareContext).PrepareContext(context.Background(), query)
	c.h.Ensure()
	return st, err
}

// isPragma reports whether query is a PRAGMA statement, which SQLite
// applies when it compiles it: one kept prepared would not apply again.
func isPragma(query string) bool {
	for _, t := range sqlscan.Significant(query) {
		if t.Kind != sqlscan.Semicolon {
			return t.Is("pragma")
		}
	}
	return false
}

func (c *reuseConn) ExecContext(_ context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	st, release, err := c.stmt(query)
	if err != nil {
		return nil, err
	}
	defer release()
	return st.(driver.StmtExecContext).ExecContext(context.Background(), args)
}

func (c *reuseConn) QueryContext(_ context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	st, release, err := c.stmt(query)
	if err != nil {
		return nil, err
	}
	rows, err := st.(driver.StmtQueryContext).QueryContext(context.Background(), args)
	if err != nil {
		release()
		return nil, err
	}
	return &releasingRows{Rows: rows, release: release}, nil
}

// releasingRows gives its statement back when closed.
type releasingRows struct {
	driver.Rows
	release func()
	closed  bool
}

func (r *releasingRows) Close() error {
	if r.closed {
		return nil
	}
	r.closed = true
	err := r.Rows.Close()
	r.release()
	return err
}

func (c *reuseConn) Prepare(query string) (driver.Stmt, error) {
	return c.PrepareContext(context.Background(), query)
}

func (c *reuseConn) PrepareContext(_ context.Context, query string) (driver.Stmt, error) {
	c.h.Ensure()
	st, err := c.prepare(query)
	if err != nil {
		return nil, err
	}
	return &waitStmt{st: st, h: c.h}, nil
}

func (c *reuseConn) Begin() (driver.Tx, error) {
	return c.BeginTx(context.Background(), driver.TxOptions{})
}

// BeginTx begins as the driver does (as _txlock says, or DEFERRED for a
// read-only transaction), with a prepared statement.
func (c *reuseConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	begin := c.begin
	if opts.ReadOnly {
		begin = "BEGIN"
	}
	if _, err := c.ExecContext(ctx, begin, nil); err != nil {
		return nil, err
	}
	return reuseTx{c}, nil
}

type reuseTx struct{ c *reuseConn }

func (t reuseTx) Commit() error {
	_, err := t.c.ExecContext(context.Background(), "COMMIT", nil)
	return err
}

func (t reuseTx) Rollback() error {
	_, err := t.c.ExecContext(context.Background(), "ROLLBACK", nil)
	return err
}

// Close gives the connection back to the run's pool, rolled back (the
// admin handle's own connection closes for good).
func (c *reuseConn) Close() error {
	if c.dead {
		return nil
	}
	c.dead = true
	if c.admin {
		c.closeRaw()
		return nil
	}
	c.s.put(c)
	return nil
}

// adminConnector opens the admin handle's connection: it keeps its
// prepared statements too (the effects queries run after every
// scenario), and never waits for a lock (as SQLite's admin handle).
type adminConnector struct{ s *sqliteSession }

func (a adminConnector) Connect(context.Context) (driver.Conn, error) {
	raw, h, err := openSQLite(a.s.dsn, a.s.params, nil)
	if err != nil {
		return nil, err
	}
	return &reuseConn{raw: raw, h: h, begin: a.s.params.begin, stmts: map[string]*cachedStmt{}, admin: true}, nil
}

func (a adminConnector) Driver() driver.Driver { return drv }

func (c *reuseConn) closeRaw() {
	for _, cs := range c.stmts {
		cs.st.Close()
	}
	c.stmts = nil
	c.h.Release()
	_ = c.raw.Close()
}

// FileReader is a Database whose state the harness may read as the
// bytes of its file, when they hold it (see ReadState).
type FileReader interface {
	// ReadState returns the database file's bytes, read into buf (grown
	// as needed), with the fields every commit changes whatever it wrote
	// (the change counter and the version-valid-for number) set to zero;
	// or false when the file alone may not be the committed content or
	// cannot be read here (the caller then asks the engine). The same
	// bytes are the same committed content.
	ReadState(buf []byte) ([]byte, bool)
}

// ReadState implements FileReader: in a rollback-journal mode, with no
// journal beside the database (no writer has changed a page the file
// does not have yet, and none left a hot journal) and no lock that would
// keep a reader out (PENDING, EXCLUSIVE: a writer about to write the
// file, or writing it), the file is what a read transaction would read.
func (d *reuseDB) ReadState(buf []byte) ([]byte, bool) {
	s := d.s
	if s.raw == nil || s.fresh {
		return buf, false
	}
	if fileExists(s.path + "-journal") {
		return buf, false
	}
	if ok, err := readable(s.rawFD); !ok || err != nil {
		return buf, false
	}
	if cap(buf) < 2*len(s.file) {
		buf = make([]byte, 2*len(s.file))
	}
	for {
		buf = buf[:cap(buf)]
		n, err := pread(s.rawFD, buf)
		if err != nil {
			return buf[:0], false
		}
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	if len(buf) < 100 || !legacy(buf) {
		return buf, false
	}
	clear(buf[24:28])
	clear(buf[92:96])
	return buf, true
}
