package backend

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/idemcheck/idemcheck/internal/outside"
	"github.com/idemcheck/idemcheck/internal/sqlscan"
)

// MySQL is the MySQL and MariaDB backend, at DSN (a go-sql-driver/mysql
// DSN: user:password@tcp(host:port)/dbname?params). The team's parameters
// (parseTime, loc, interpolateParams, ...) are kept; the database named is
// only where the run's keeper connects.
//
// Isolation: a run (one Check, Hunt or Replay) plays its scenarios in a
// database of its own, idemcheck_r<pid>_<n>_<random>_w, where the team's
// schema runs once; the rows the schema seeded are copied into a second
// database of the run's (_s). Every scenario after the first starts from
// the same state: each of the team's tables a worker's statement may have
// written (one that names it and is no plain read; any table, when a
// foreign key cascades or the schema has stored routines) truncated
// (TRUNCATE, not DELETE: a table made anew holds no delete-marked
// records, whose gap locks would depend on when the server's purge ran),
// its seeded rows put back and its AUTO_INCREMENT counter set back, in
// one round trip with foreign key checks off. When a worker ran a statement that may change the
// schema (CREATE, ALTER, DROP, RENAME of anything but a temporary table,
// or CALL, PREPARE, EXECUTE, whose SQL the harness cannot read), or the
// schema made triggers (which TRUNCATE skips but the restoring INSERT
// would fire) or sequences, the next scenario gets the database made
// anew: dropped, created and the schema run again. The isolation level
// is the server's (REPEATABLE READ unless the team's DSN says otherwise).
//
// Leftovers: the run's keeper connection, on the DSN's database, holds
// the named lock of the run (GET_LOCK) from before its databases are made
// until they are dropped. Close drops them; a run killed before leaves
// them, and the next Start of any run on the server drops every such
// database whose run's lock is free (the server frees a connection's
// named locks when it ends), and no other.
//
// Lock waits: every worker connection runs with innodb_lock_wait_timeout
// and lock_wait_timeout 0: a statement that meets a row, gap or metadata
// lock another connection holds answers error 1205 at once, the server
// rolls back that statement only (the server must run with
// innodb_rollback_on_timeout off, its default; Start refuses otherwise),
// and the harness parks the worker as waiting and runs the statement
// again when another worker has moved. A statement that says NOWAIT or
// WAIT n gets its 1205 as its answer: the team asked not to wait. Where
// the scheduler gives up in a deadlock between workers (each waits for
// another's lock, a cycle the server never sees, every wait having been
// answered at once), the connection answers as InnoDB's detector would
// (Deadlocker): the transaction rolled back, then error 1213. Where it
// gives up another wait (a lock the handler holds itself on another
// connection), the statement answers 1205 and its transaction stays
// open, as on a server whose lock wait timed out. The server's own
// detector answers 1213 where a statement would wait for a lock in a
// cycle it sees at once.
// Named locks (GET_LOCK with a timeout) and SLEEP wait on the server, on
// the machine's clock; named locks belong to the whole server, shared by
// runs in parallel. Statements that change the whole server (users,
// grants, SET GLOBAL, other databases) are not refused.
//
// Clock: before a worker's statement, when the scenario's time has moved
// since the connection last set it, SET timestamp makes the session's
// clock the scenario's, to the microsecond: NOW(), CURRENT_TIMESTAMP,
// UTC_TIMESTAMP(), CURDATE(), UNIX_TIMESTAMP(), column defaults and ON
// UPDATE CURRENT_TIMESTAMP follow it. SYSDATE() reads the machine's
// clock: it is rewritten into NOW() where the statement has no backslash,
// # or $ (which the project's scanner does not read as MySQL does), and
// named as on the machine's clock otherwise. The schema runs at Epoch.
//
// Connections: a worker's connection is dialled when it opens and closed
// when it closes, after a ROLLBACK when a transaction may be open, so
// that it is rolled back before Close returns. The reset (1-2 TRUNCATEs,
// a few milliseconds each) and the dials are most of what a scenario
// costs on the server: BenchmarkMySQLReset.
type MySQL struct{ DSN string }

// Name implements Backend.
func (MySQL) Name() string { return "mysql" }

// Fresh implements Backend; a MySQL backend is used through Start.
func (MySQL) Fresh(context.Context) (Database, error) {
	return nil, errors.New("the mysql backend must be started first (Start)")
}

// myRunPrefix begins the name of every run (its named lock) and of its
// databases (the run's name, then _w or _s).
const myRunPrefix = "idemcheck_r"

// myLeftover matches the name of a run's database.
const myLeftover = `^idemcheck_r[0-9]+_[0-9]+_[0-9a-f]{8}_[ws]$`

var myRunSeq atomic.Int64

// Start implements Starter: it drops the leftovers of runs that are gone,
// makes the run's databases and opens its handles. It must be called
// outside any testing/synctest bubble.
func (m MySQL) Start(ctx context.Context) (Session, error) {
	cfg, err := mysql.ParseDSN(m.DSN)
	if err != nil {
		return nil, fmt.Errorf("mysql DSN: %w", err)
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = 10 * time.Second
	}
	run := fmt.Sprintf("%s%d_%d_%08x", myRunPrefix, os.Getpid(), myRunSeq.Add(1), rand.Uint32())
	s := &mySession{run: run, work: run + "_w", seed: run + "_s"}
	kc, err := mysql.NewConnector(cfg)
	if err != nil {
		return nil, fmt.Errorf("mysql DSN: %w", err)
	}
	s.keeperDB = sql.OpenDB(kc)
	s.keeper, err = s.keeperDB.Conn(ctx)
	if err != nil {
		_ = s.keeperDB.Close()
		return nil, fmt.Errorf("mysql: connect: %w", err)
	}
	if err := s.open(ctx, cfg); err != nil {
		_ = s.Close()
		return nil, err
	}
	return s, nil
}

// mySession is one run on MySQL or MariaDB.
type mySession struct {
	// run names the run and its named lock; work and seed are its
	// databases: the scenarios', and the copies of the seeded rows.
	run, work, seed string
	// keeper holds the run's lock for the whole run, and makes and drops
	// its databases.
	keeperDB *sql.DB
	keeper   *sql.Conn
	// admin is the harness's handle on the scenarios' database; workers
	// dials the workers' connections.
	admin   *sql.DB
	workers driver.Connector

	mu     sync.Mutex
	closed bool
	// made is set once the work database was made, prepared once the
	// team's schema ran there; rebuild: the next scenario needs it made
	// anew (a worker may have changed the schema), always: every one
	// does (triggers, sequences).
	made, prepared bool
	rebuild        atomic.Bool
	always         bool
	// tables are the team's tables, as the reset restores them; names
	// finds one by its lower-cased name; everyWrite: a write may touch
	// any table (a foreign key's cascade, a stored routine).
	tables     []myTable
	names      map[string]int
	everyWrite bool
	// desc is the last description Describe read, with the catalog's
	// stamp it was read at (see myCatalogStamp).
	descMu    sync.Mutex
	desc      Description
	descStamp string
	// dirty marks the tables a worker's statement may have written since
	// the last reset: only those are truncated and restored.
	dirtyMu sync.Mutex
	dirty   []bool
	// seen caches what each statement a worker ran may do.
	seen sync.Map // string -> *myStatement
}

// myTable is one of the team's tables: what restores it.
type myTable struct {
	name string
	// restore truncates it, puts its seeded rows back and sets its
	// AUTO_INCREMENT counter back.
	restore string
}

// myStatement is what a worker's statement may do, read once.
type myStatement struct {
	// ddl: it may change the schema; the database is made anew.
	ddl bool
	// all: it may write any table; tables, the ones it names.
	all    bool
	tables []int
}

// open sweeps the leftovers, takes the run's lock, makes its databases,
// and opens the handles.
func (s *mySession) open(ctx context.Context, cfg *mysql.Config) error {
	var rollbackOnTimeout int
	if err := s.keeper.QueryRowContext(ctx, "SELECT @@innodb_rollback_on_timeout").Scan(&rollbackOnTimeout); err != nil {
		return fmt.Errorf("mysql: read innodb_rollback_on_timeout: %w", err)
	}
	if rollbackOnTimeout != 0 {
		return errors.New("mysql: the server runs with innodb_rollback_on_timeout on, which rolls a whole transaction back at a lock wait: " +
			"the harness needs it off (the default) to let the scheduler decide each wait")
	}
	var got sql.NullInt64
	if err := s.keeper.QueryRowContext(ctx, "SELECT GET_LOCK(?, 0)", s.run).Scan(&got); err != nil || got.Int64 != 1 {
		return fmt.Errorf("mysql: take the run's lock %s: %v", s.run, err)
	}
	s.sweep(ctx)
	for _, name := range []string{s.work, s.seed} {
		if _, err := s.keeper.ExecContext(ctx, "CREATE DATABASE "+myIdent(name)); err != nil {
			return fmt.Errorf("mysql: create the run's database: %w", err)
		}
	}
	s.made = true
	admin := cfg.Clone()
	admin.DBName = s.work
	// The harness's reset is one script.
	admin.MultiStatements = true
	admin.Params = cloneParams(cfg.Params)
	// The schema and the effects run on the scenario's time zero.
	admin.Params["timestamp"] = myTime(Epoch)
	// The harness's statements run while no worker holds a lock; one that
	// a connection left behind fails the reset in seconds rather than
	// holding the run for the server's default (a day for metadata).
	admin.Params["lock_wait_timeout"] = "30"
	admin.Params["innodb_lock_wait_timeout"] = "30"
	ac, err := mysql.NewConnector(admin)
	if err != nil {
		return err
	}
	s.admin = sql.OpenDB(outsideConnector{ac})
	s.admin.SetMaxIdleConns(2)
	worker := cfg.Clone()
	worker.DBName = s.work
	worker.Params = cloneParams(cfg.Params)
	// Every wait for a row, gap or metadata lock answers at once (1205):
	// the scheduler decides who waits.
	worker.Params["innodb_lock_wait_timeout"] = "0"
	worker.Params["lock_wait_timeout"] = "0"
	worker.Params["timestamp"] = myTime(Epoch)
	wc, err := mysql.NewConnector(worker)
	if err != nil {
		return err
	}
	s.workers = outsideConnector{wc}
	return nil
}

// cloneParams copies a DSN's parameters.
func cloneParams(p map[string]string) map[string]string {
	out := make(map[string]string, len(p)+3)
	for k, v := range p {
		out[k] = v
	}
	return out
}

// outsideConnector dials its connections outside every testing/synctest
// bubble: the driver starts a goroutine per connection, which must not
// belong to the scenario that happened to dial it.
type outsideConnector struct{ driver.Connector }

func (c outsideConnector) Connect(context.Context) (driver.Conn, error) {
	var conn driver.Conn
	var err error
	<-outside.Go(func() { conn, err = c.Connector.Connect(context.Background()) })
	return conn, err
}

// sweep drops the databases of runs that are gone: those whose named lock
// is free. A run takes its lock before it makes its databases and holds
// it until it has dropped them, so a live run's are never taken. Errors
// are ignored: another run may be sweeping the same ones.
func (s *mySession) sweep(ctx context.Context) {
	rows, err := s.keeper.QueryContext(ctx, "SELECT SCHEMA_NAME FROM information_schema.SCHEMATA WHERE SCHEMA_NAME REGEXP ? ORDER BY SCHEMA_NAME", myLeftover)
	if err != nil {
		return
	}
	var names []string
	for rows.Next() {
		var n string
		if rows.Scan(&n) == nil {
			names = append(names, n)
		}
	}
	rows.Close()
	for _, n := range names {
		var free sql.NullInt64
		if err := s.keeper.QueryRowContext(ctx, "SELECT IS_FREE_LOCK(?)", n[:len(n)-2]).Scan(&free); err != nil || free.Int64 != 1 {
			continue
		}
		_, _ = s.keeper.ExecContext(ctx, "DROP DATABASE IF EXISTS "+myIdent(n))
	}
}

func (s *mySession) Name() string { return "mysql" }

// Database is the name of the scenarios' database.
func (s *mySession) Database() string { return s.work }

func (s *mySession) Fresh(context.Context) (Database, error) {
	return &myDB{s: s}, nil
}

// Close drops the run's databases and ends its connections.
func (s *mySession) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.mu.Unlock()
	if s.admin != nil {
		_ = s.admin.Close()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var first error
	if s.made {
		for _, name := range []string{s.work, s.seed} {
			if _, err := s.keeper.ExecContext(ctx, "DROP DATABASE IF EXISTS "+myIdent(name)); err != nil && first == nil {
				first = fmt.Errorf("mysql: drop the run's database %s: %w", name, err)
			}
		}
	}
	_ = s.keeper.Close()
	if err := s.keeperDB.Close(); first == nil {
		first = err
	}
	return first
}

// prepare brings the scenarios' database to the state the team's schema
// leaves: by running it the first time (and whenever the database must be
// made anew), by the reset script otherwise.
func (s *mySession) prepare(ctx context.Context, run func(*sql.DB) error) error {
	// The driver watches a cancellable context on a goroutine of the
	// connection's, made outside the scenario's bubble: the harness's own
	// statements are bounded by their lock wait timeouts instead.
	ctx = context.WithoutCancel(ctx)
	if s.prepared && !s.always && !s.rebuild.Load() {
		if script := s.resetScript(); script != "" {
			if _, err := s.admin.ExecContext(ctx, script); err != nil {
				return fmt.Errorf("mysql: reset the schema's state: %w", err)
			}
		}
		return nil
	}
	if s.prepared || s.rebuild.Load() {
		if err := s.remake(ctx); err != nil {
			return err
		}
	}
	s.rebuild.Store(false)
	// Until the schema has run in full, the next scenario starts over.
	s.prepared = false
	if err := run(s.admin); err != nil {
		s.rebuild.Store(true)
		return err
	}
	if err := s.discover(ctx); err != nil {
		s.rebuild.Store(true)
		return fmt.Errorf("mysql: read the schema's tables: %w", err)
	}
	s.prepared = true
	return nil
}

// remake drops the run's databases and creates them empty.
func (s *mySession) remake(ctx context.Context) error {
	for _, name := range []string{s.work, s.seed} {
		if _, err := s.keeper.ExecContext(ctx, "DROP DATABASE IF EXISTS "+myIdent(name)); err != nil {
			return fmt.Errorf("mysql: drop the run's database: %w", err)
		}
		if _, err := s.keeper.ExecContext(ctx, "CREATE DATABASE "+myIdent(name)); err != nil {
			return fmt.Errorf("mysql: create the run's database: %w", err)
		}
	}
	// The admin handle's sessions named the dropped database: new ones.
	s.admin.SetMaxIdleConns(0)
	s.admin.SetMaxIdleConns(2)
	return nil
}

// discover reads the tables the schema made, copies the rows it seeded
// into the seed database, and writes the reset script.
func (s *mySession) discover(ctx context.Context) error {
	var special int
	if err := s.admin.QueryRowContext(ctx, `SELECT (SELECT COUNT(*) FROM information_schema.TRIGGERS WHERE TRIGGER_SCHEMA = DATABASE())
  + (SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_TYPE NOT IN ('BASE TABLE', 'VIEW', 'SYSTEM VIEW'))`).Scan(&special); err != nil {
		return err
	}
	// A trigger would fire on the restoring INSERT; a sequence is no
	// table to truncate: the database is made anew every scenario.
	s.always = special > 0
	if s.always {
		return nil
	}
	rows, err := s.admin.QueryContext(ctx, `SELECT t.TABLE_NAME, COALESCE(t.AUTO_INCREMENT, 0),
  COALESCE((SELECT GROUP_CONCAT(CONCAT('`+"`"+`', REPLACE(c.COLUMN_NAME, '`+"`"+`', '`+"``"+`'), '`+"`"+`') ORDER BY c.ORDINAL_POSITION SEPARATOR ', ')
            FROM information_schema.COLUMNS c
            WHERE c.TABLE_SCHEMA = t.TABLE_SCHEMA AND c.TABLE_NAME = t.TABLE_NAME AND c.IS_GENERATED = 'NEVER'), '')
FROM information_schema.TABLES t WHERE t.TABLE_SCHEMA = DATABASE() AND t.TABLE_TYPE = 'BASE TABLE' ORDER BY t.TABLE_NAME`)
	if err != nil {
		return err
	}
	type table struct {
		name, cols string
		autoInc    int64
	}
	var tables []table
	for rows.Next() {
		var t table
		if err := rows.Scan(&t.name, &t.autoInc, &t.cols); err != nil {
			rows.Close()
			return err
		}
		tables = append(tables, t)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	s.tables, s.names = nil, map[string]int{}
	for i, t := range tables {
		var b strings.Builder
		fmt.Fprintf(&b, "TRUNCATE TABLE %s; ", myIdent(t.name))
		var any int
		if err := s.admin.QueryRowContext(ctx, "SELECT COUNT(*) FROM (SELECT 1 FROM "+myIdent(t.name)+" LIMIT 1) x").Scan(&any); err != nil {
			return err
		}
		if any > 0 && t.cols != "" {
			seed := myIdent(s.seed) + "." + myIdent(fmt.Sprintf("seed_%d", i))
			if _, err := s.admin.ExecContext(ctx, fmt.Sprintf("CREATE TABLE %s AS SELECT %s FROM %s", seed, t.cols, myIdent(t.name))); err != nil {
				return err
			}
			fmt.Fprintf(&b, "INSERT INTO %s (%s) SELECT %s FROM %s; ", myIdent(t.name), t.cols, t.cols, seed)
		}
		if t.autoInc > 1 {
			fmt.Fprintf(&b, "ALTER TABLE %s AUTO_INCREMENT = %d; ", myIdent(t.name), t.autoInc)
		}
		s.names[strings.ToLower(t.name)] = len(s.tables)
		s.tables = append(s.tables, myTable{name: t.name, restore: b.String()})
	}
	// A cascading foreign key or a stored routine writes tables the
	// statement does not name.
	var hidden int
	if err := s.admin.QueryRowContext(ctx, `SELECT (SELECT COUNT(*) FROM information_schema.REFERENTIAL_CONSTRAINTS
  WHERE CONSTRAINT_SCHEMA = DATABASE() AND (DELETE_RULE NOT IN ('RESTRICT', 'NO ACTION') OR UPDATE_RULE NOT IN ('RESTRICT', 'NO ACTION')))
  + (SELECT COUNT(*) FROM information_schema.ROUTINES WHERE ROUTINE_SCHEMA = DATABASE())`).Scan(&hidden); err != nil {
		return err
	}
	s.everyWrite = hidden > 0
	s.seen.Clear()
	s.dirtyMu.Lock()
	s.dirty = make([]bool, len(s.tables))
	s.dirtyMu.Unlock()
	return nil
}

// resetScript restores the tables written since the last reset, and
// forgets them; "" when none was.
func (s *mySession) resetScript() string {
	s.dirtyMu.Lock()
	defer s.dirtyMu.Unlock()
	var b strings.Builder
	for i, d := range s.dirty {
		if d {
			b.WriteString(s.tables[i].restore)
			s.dirty[i] = false
		}
	}
	if b.Len() == 0 {
		return ""
	}
	return "SET FOREIGN_KEY_CHECKS = 0; " + b.String() + "SET FOREIGN_KEY_CHECKS = 1"
}

// note records what a worker's statement may do before it runs: DDL has
// the next scenario's database made anew; a write marks the tables it
// may write for the reset.
func (s *mySession) note(query string) {
	v, ok := s.seen.Load(query)
	if !ok {
		v, _ = s.seen.LoadOrStore(query, s.read(query))
	}
	st := v.(*myStatement)
	if st.ddl {
		s.rebuild.Store(true)
		return
	}
	if !st.all && len(st.tables) == 0 {
		return
	}
	s.dirtyMu.Lock()
	defer s.dirtyMu.Unlock()
	for i := range s.dirty {
		if st.all {
			s.dirty[i] = true
		}
	}
	for _, i := range st.tables {
		if i < len(s.dirty) {
			s.dirty[i] = true
		}
	}
}

// readOnly are the first words of statements that write no table (a
// locking read leaves no deleted records behind).
var readOnly = map[string]bool{
	"select": true, "show": true, "describe": true, "desc": true, "explain": true, "begin": true, "start": true,
	"commit": true, "rollback": true, "savepoint": true, "release": true, "set": true, "do": true, "lock": true,
	"unlock": true, "xa": true, "help": true, "use": true,
}

// read reads what a statement may do (see myStatement). It errs on the
// side of writing: a statement whose text the project's scanner may not
// read as MySQL does (backslash escapes, # comments) may write any table.
func (s *mySession) read(query string) *myStatement {
	st := &myStatement{ddl: mayChangeSchema(query)}
	if st.ddl {
		return st
	}
	w := sqlscan.Significant(query)
	if len(w) == 0 {
		return st
	}
	several := false
	for _, t := range w[:len(w)-1] {
		several = several || t.Kind == sqlscan.Semicolon
	}
	if w[0].Kind == sqlscan.Word && readOnly[strings.ToLower(w[0].Text)] && !several && !s.everyWrite {
		return st
	}
	if s.everyWrite || strings.ContainsAny(query, "\\#") {
		st.all = true
		return st
	}
	for _, t := range w {
		if i, ok := s.names[strings.ToLower(t.Ident())]; ok && t.Ident() != "" {
			st.tables = append(st.tables, i)
		}
	}
	return st
}

// mayChangeSchema reports whether a worker's statement may change the
// schema: DDL on anything but a temporary table, or SQL the harness cannot
// read (CALL, PREPARE, EXECUTE). TRUNCATE changes no schema: the reset
// truncates anyway.
func mayChangeSchema(query string) bool {
	w := sqlscan.Significant(query)
	for i, t := range w {
		if i > 0 && w[i-1].Kind != sqlscan.Semicolon {
			continue
		}
		switch {
		case t.Is("create"), t.Is("drop"):
			if i+1 >= len(w) || !w[i+1].Is("temporary") {
				return true
			}
		case t.Is("alter"), t.Is("rename"), t.Is("call"), t.Is("prepare"), t.Is("execute"), t.Is("import"):
			return true
		}
	}
	return false
}

// myIdent quotes a name.
func myIdent(name string) string { return "`" + strings.ReplaceAll(name, "`", "``") + "`" }

// myTime is t as MySQL's timestamp variable: Unix seconds, microseconds.
func myTime(t time.Time) string {
	us := t.UnixMicro()
	sign := ""
	if us < 0 {
		sign, us = "-", -us
	}
	return fmt.Sprintf("%s%d.%06d", sign, us/1e6, us%1e6)
}
