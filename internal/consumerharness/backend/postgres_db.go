package backend

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
)

// The run's databases: their names, the harness's schema in them, the
// copies of the template, the sweep of the leftovers of runs that are
// gone, and what the reset reads from the catalog.

// pgRunPrefix begins the name of every run (its connections'
// application_name) and of its databases (the run's name, then _w or _t).
const pgRunPrefix = "idemcheck_r"

// pgLeftover matches the name of a run's database.
const pgLeftover = `^idemcheck_r[0-9]+_[0-9]+_[0-9a-f]{8}_[tw]$`

// harnessSchema is the harness's schema in the run's databases: the
// clock, and what watches for DDL.
const harnessSchema = "idemcheck"

// schemaChanged is the SQLSTATE that idemcheck.unchanged() raises when a
// scenario changed the schema.
const schemaChanged = "ICDDL"

// harnessScript makes the harness's schema in a run's database: the
// clock table and the clock functions.
func (s *pgSession) harnessScript() string {
	return fmt.Sprintf(`CREATE SCHEMA %[1]s;
CREATE TABLE %[1]s.clock (now timestamptz NOT NULL);
INSERT INTO %[1]s.clock VALUES (%[2]s);
CREATE FUNCTION %[1]s.statement_timestamp() RETURNS timestamptz LANGUAGE sql STABLE AS $$ SELECT c.now FROM %[1]s.clock c $$;
CREATE FUNCTION %[1]s.clock_timestamp() RETURNS timestamptz LANGUAGE sql VOLATILE AS $$ SELECT c.now FROM %[1]s.clock c $$;
CREATE FUNCTION %[1]s.now() RETURNS timestamptz LANGUAGE sql STABLE AS
  $$ SELECT coalesce(nullif(pg_catalog.current_setting('idemcheck.tx_now', true), '')::timestamptz, (SELECT c.now FROM %[1]s.clock c)) $$;
CREATE FUNCTION %[1]s.transaction_timestamp() RETURNS timestamptz LANGUAGE sql STABLE AS $$ SELECT %[1]s.now() $$;
CREATE FUNCTION %[1]s.timeofday() RETURNS text LANGUAGE sql VOLATILE AS
  $$ SELECT pg_catalog.to_char(%[1]s.clock_timestamp(), 'Dy Mon DD HH24:MI:SS.US YYYY TZ') $$`,
		harnessSchema, pgTime(Epoch))
}

// watchScript makes what notes the DDL a scenario commits: event triggers
// (ENABLE ALWAYS: also under session_replication_role = replica) that add
// a row to idemcheck.ddl for each object a command makes, changes or
// drops outside the temporary schema; idemcheck.unchanged(), which the
// reset calls first and which fails with SQLSTATE schemaChanged when
// there is one; and idemcheck.baseline, the objects of the template,
// against which undo tells the objects a scenario made.
const watchScript = `CREATE FUNCTION idemcheck.watched() RETURNS name[] LANGUAGE sql IMMUTABLE AS
  $$ SELECT '{pg_class,pg_proc,pg_type,pg_namespace,pg_trigger,pg_rewrite,pg_policy,pg_constraint,pg_attrdef,pg_statistic_ext}'::name[] $$;
CREATE UNLOGGED TABLE idemcheck.ddl (seq bigserial, command text NOT NULL, kind text, identity text, classid oid, objid oid);
CREATE FUNCTION idemcheck.note_ddl() RETURNS event_trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO idemcheck.ddl (command, kind, identity, classid, objid)
  SELECT command_tag, object_type, object_identity, classid, objid FROM pg_catalog.pg_event_trigger_ddl_commands()
  WHERE schema_name IS DISTINCT FROM 'pg_temp';
END $$;
CREATE FUNCTION idemcheck.note_drop() RETURNS event_trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO idemcheck.ddl (command, kind, identity, classid, objid)
  SELECT 'DROP', object_type, object_identity, classid, objid FROM pg_catalog.pg_event_trigger_dropped_objects()
  WHERE NOT is_temporary;
END $$;
CREATE FUNCTION idemcheck.unchanged() RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  IF EXISTS (SELECT 1 FROM idemcheck.ddl) THEN
    RAISE EXCEPTION 'idemcheck: the scenario changed the schema' USING ERRCODE = 'ICDDL';
  END IF;
END $$;
CREATE TABLE idemcheck.baseline AS
  SELECT c.oid AS classid, o.objid FROM pg_catalog.pg_class c,
    LATERAL (SELECT oid AS objid FROM pg_catalog.pg_class WHERE c.relname = 'pg_class'
      UNION ALL SELECT oid FROM pg_catalog.pg_proc WHERE c.relname = 'pg_proc'
      UNION ALL SELECT oid FROM pg_catalog.pg_type WHERE c.relname = 'pg_type'
      UNION ALL SELECT oid FROM pg_catalog.pg_namespace WHERE c.relname = 'pg_namespace'
      UNION ALL SELECT oid FROM pg_catalog.pg_trigger WHERE c.relname = 'pg_trigger'
      UNION ALL SELECT oid FROM pg_catalog.pg_rewrite WHERE c.relname = 'pg_rewrite'
      UNION ALL SELECT oid FROM pg_catalog.pg_policy WHERE c.relname = 'pg_policy'
      UNION ALL SELECT oid FROM pg_catalog.pg_constraint WHERE c.relname = 'pg_constraint'
      UNION ALL SELECT oid FROM pg_catalog.pg_attrdef WHERE c.relname = 'pg_attrdef'
      UNION ALL SELECT oid FROM pg_catalog.pg_statistic_ext WHERE c.relname = 'pg_statistic_ext') o
  WHERE c.relnamespace = 'pg_catalog'::pg_catalog.regnamespace AND c.relname = ANY (idemcheck.watched());
CREATE UNIQUE INDEX ON idemcheck.baseline (objid, classid);
ANALYZE idemcheck.baseline;
CREATE FUNCTION idemcheck.made(c oid, o oid) RETURNS boolean LANGUAGE sql STABLE AS $$
  SELECT o IS NOT NULL AND c IN (SELECT oid FROM pg_catalog.pg_class
                                 WHERE relnamespace = 'pg_catalog'::pg_catalog.regnamespace AND relname = ANY (idemcheck.watched()))
    AND NOT EXISTS (SELECT 1 FROM idemcheck.baseline b WHERE b.objid = o AND b.classid = c) $$;
CREATE EVENT TRIGGER idemcheck_ddl ON ddl_command_end EXECUTE FUNCTION idemcheck.note_ddl();
CREATE EVENT TRIGGER idemcheck_drop ON sql_drop EXECUTE FUNCTION idemcheck.note_drop();
ALTER EVENT TRIGGER idemcheck_ddl ENABLE ALWAYS;
ALTER EVENT TRIGGER idemcheck_drop ENABLE ALWAYS`

// changes lists what idemcheck.ddl noted, in order: for each row,
// whether its object is one the scenario made (see idemcheck.made: of a
// catalog the baseline covers, and not in it), and whether it goes with
// another object the scenario made (the index of a new table's primary
// key, its serial's sequence, a trigger on it, a partition of it).
const changes = `SELECT d.command, coalesce(d.kind, ''), coalesce(d.identity, ''), idemcheck.made(d.classid, d.objid),
  coalesce((SELECT bool_or(idemcheck.made(p.refclassid, p.refobjid)) FROM pg_catalog.pg_depend p
            WHERE p.classid = d.classid AND p.objid = d.objid AND p.deptype IN ('a', 'i')), false)
FROM idemcheck.ddl d ORDER BY d.seq`

// dropKeyword is the DROP of each kind of object undo drops.
var dropKeyword = map[string]string{
	"table": "TABLE", "index": "INDEX", "sequence": "SEQUENCE", "view": "VIEW", "materialized view": "MATERIALIZED VIEW",
	"foreign table": "FOREIGN TABLE", "schema": "SCHEMA", "function": "FUNCTION", "procedure": "PROCEDURE",
	"aggregate": "AGGREGATE", "type": "TYPE", "composite type": "TYPE", "domain": "DOMAIN", "trigger": "TRIGGER",
	"rule": "RULE", "policy": "POLICY", "statistics object": "STATISTICS",
}

// undo takes away what a scenario made, when all the DDL it committed
// made objects of its own (a table a library makes on first use, an
// index, a schema, with what they hold) and changed or dropped nothing of
// the template's: it drops them, newest first, without CASCADE, in one
// transaction. It reports whether it did; if not (the scenario changed an
// object of the template, a GRANT, a kind of object it does not know, a
// DROP that fails), the run needs a new copy of the template. Dropping a
// table forces a flush of the write-ahead log, but is still far cheaper
// than a copy of a database.
func (s *pgSession) undo(ctx context.Context) bool {
	rows, err := s.admin.QueryContext(ctx, changes)
	if err != nil {
		return false
	}
	defer rows.Close()
	var made []string
	seen := map[string]bool{}
	for rows.Next() {
		var command, kind, identity string
		var own, owned bool
		if err := rows.Scan(&command, &kind, &identity, &own, &owned); err != nil || !own {
			return false
		}
		if command == "DROP" || owned {
			// Of an object the scenario made, dropped already, or to be
			// dropped with the one it goes with.
			continue
		}
		kw, ok := dropKeyword[kind]
		if !ok || identity == "" {
			return false
		}
		if drop := "DROP " + kw + " IF EXISTS " + identity; !seen[drop] {
			seen[drop] = true
			made = append(made, drop)
		}
	}
	if rows.Err() != nil || rows.Close() != nil {
		return false
	}
	var b strings.Builder
	b.WriteString("BEGIN; ")
	for i := len(made) - 1; i >= 0; i-- {
		b.WriteString(made[i] + "; ")
	}
	b.WriteString("DELETE FROM idemcheck.ddl; COMMIT")
	if s.adminExec(ctx, b.String()) != nil {
		return false
	}
	s.undos++
	return true
}

// sweep drops the databases of runs that are gone: those whose run has
// no connection left on the server (its keeper's application_name). A
// run's keeper connects before it makes its databases and lives until it
// has dropped them, so a live run's are never taken. Errors are ignored:
// another run may be sweeping the same ones, or they may be another
// role's.
func (s *pgSession) sweep(ctx context.Context) {
	rows, err := s.keeper.Query(ctx, `SELECT d.datname FROM pg_catalog.pg_database d
WHERE d.datname ~ $1 AND NOT EXISTS (
  SELECT 1 FROM pg_catalog.pg_stat_activity a WHERE a.application_name = left(d.datname, -2))
ORDER BY d.datname`, pgLeftover)
	if err != nil {
		return
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return
	}
	_ = s.dropDatabases(ctx, names...)
}

// dropDatabases drops the databases named, ending the connections left
// on them; it returns the first error.
func (s *pgSession) dropDatabases(ctx context.Context, names ...string) error {
	var first error
	for _, name := range names {
		if _, err := s.keeper.Exec(ctx, "DROP DATABASE IF EXISTS "+ident(name)+" WITH (FORCE)"); err != nil && first == nil {
			first = fmt.Errorf("postgres: drop the run's database %s: %w", name, err)
		}
	}
	return first
}

// makeWork makes the scenarios' database, with the harness's schema,
// dropping the one there was (whose state the team's schema, failing,
// left half made), and connects the clock's connection and one of the
// admin handle's to it. It runs outside the bubbles (Start, or do).
func (s *pgSession) makeWork() error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := s.disconnect(ctx); err != nil {
		return err
	}
	if _, err := s.keeper.Exec(ctx, "CREATE DATABASE "+ident(s.work)); err != nil {
		return fmt.Errorf("postgres: create the run's database: %w", err)
	}
	if err := s.adminExec(ctx, s.harnessScript()); err != nil {
		return fmt.Errorf("postgres: make the harness's schema in the run's database: %w", err)
	}
	return s.connectClock(ctx)
}

// makeTemplate makes the run's template, with the harness's schema. It
// runs on the session's own goroutine (do).
func (s *pgSession) makeTemplate() error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := s.dropDatabases(ctx, s.tmpl); err != nil {
		return err
	}
	if _, err := s.keeper.Exec(ctx, "CREATE DATABASE "+ident(s.tmpl)); err != nil {
		return fmt.Errorf("postgres: create the run's template: %w", err)
	}
	setup := s.openSetup(s.tmpl)
	defer setup.Close()
	if err := rawExec(ctx, setup, s.harnessScript()); err != nil {
		return fmt.Errorf("postgres: make the harness's schema in the run's template: %w", err)
	}
	return nil
}

// copyTemplate gives the scenarios a new copy of the template. It runs on
// the session's own goroutine (do).
func (s *pgSession) copyTemplate() error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := s.disconnect(ctx); err != nil {
		return err
	}
	if err := s.quiet(ctx, s.tmpl); err != nil {
		return err
	}
	if _, err := s.keeper.Exec(ctx, fmt.Sprintf("CREATE DATABASE %s TEMPLATE %s", ident(s.work), ident(s.tmpl))); err != nil {
		return fmt.Errorf("postgres: copy the run's template: %w", err)
	}
	if err := s.connectClock(ctx); err != nil {
		return err
	}
	// One connection of the admin handle made here, outside the bubbles:
	// the harness's queries take it.
	conn, err := s.admin.Conn(ctx)
	if err != nil {
		return fmt.Errorf("postgres: connect to the run's database: %w", err)
	}
	return conn.Close()
}

// disconnect closes the run's connections to the scenarios' database
// (the pooled workers', the idle sessions of pgx's, the admin handle's
// idle ones, the clock's) and drops it.
func (s *pgSession) disconnect(ctx context.Context) error {
	s.mu.Lock()
	idle := s.idle
	s.idle = nil
	s.mu.Unlock()
	for _, c := range idle {
		_ = c.raw.Close()
	}
	s.closeRaw()
	s.admin.SetMaxIdleConns(0)
	s.admin.SetMaxIdleConns(2)
	s.clockMu.Lock()
	if s.clockConn != nil {
		_ = s.clockConn.Close(ctx)
		s.clockConn = nil
	}
	s.clockMu.Unlock()
	return s.dropDatabases(ctx, s.work)
}

// connectClock connects the clock's connection to the scenarios'
// database, whose clock stands at Epoch.
func (s *pgSession) connectClock(ctx context.Context) error {
	c, err := pgx.ConnectConfig(ctx, s.clockCfg)
	if err != nil {
		return fmt.Errorf("postgres: connect the clock's connection: %w", err)
	}
	s.clockMu.Lock()
	s.clockConn, s.clockAt = c, Epoch
	s.clockMu.Unlock()
	return nil
}

// quiet waits until no connection is left on database name: a closed
// connection's server process may take a moment to end, and CREATE
// DATABASE would wait for it in steps of 100 ms.
func (s *pgSession) quiet(ctx context.Context, name string) error {
	for {
		var n int
		if err := s.keeper.QueryRow(ctx, "SELECT count(*) FROM pg_catalog.pg_stat_activity WHERE datname = $1", name).Scan(&n); err != nil {
			return err
		}
		if n == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("postgres: %d connection(s) left on the run's template: %w", n, ctx.Err())
		case <-time.After(time.Millisecond):
		}
	}
}

// screenConnector makes the connections of the setup handle, whose
// statements are screened (see Refused) before they run.
type screenConnector struct{ driver.Connector }

func (c screenConnector) Connect(ctx context.Context) (driver.Conn, error) {
	raw, err := c.Connector.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &screenConn{Conn: raw.(*stdlib.Conn)}, nil
}

// screenConn is a connection of the setup handle: pgx's, with its
// statements screened.
type screenConn struct{ *stdlib.Conn }

func (c *screenConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	if err := screen(ctx, c.Conn, query, refusal(query)); err != nil {
		return nil, err
	}
	return c.Conn.ExecContext(ctx, query, args)
}

func (c *screenConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	if err := screen(ctx, c.Conn, query, refusal(query)); err != nil {
		return nil, err
	}
	return c.Conn.QueryContext(ctx, query, args)
}

func (c *screenConn) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	if err := screen(ctx, c.Conn, query, refusal(query)); err != nil {
		return nil, err
	}
	return c.Conn.PrepareContext(ctx, query)
}

// screen returns r, the refusal of query, unless it is a CREATE
// EXTENSION IF NOT EXISTS of an extension the database has already.
func screen(ctx context.Context, c *stdlib.Conn, query string, r *Refused) error {
	if r == nil {
		return nil
	}
	if r.extension != "" {
		var has bool
		err := c.Conn().QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_extension WHERE extname = $1)", r.extension).Scan(&has)
		if err == nil && has {
			return nil
		}
	}
	return r
}

// pgTable is one of the team's tables, as the reset reads it.
type pgTable struct {
	name string // schema-qualified, quoted
	cols string // the columns that take values (not generated), quoted
	rows bool
	// plain is false for a partitioned table.
	plain bool
}

// teamRelations selects the relations of the team's schemas: every
// schema but the server's and the harness's, and no member of an
// extension (template1 may have some).
const teamRelations = `FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname NOT IN ('pg_catalog', 'information_schema', 'pg_toast', 'idemcheck')
  AND n.nspname NOT LIKE 'pg\_temp\_%' AND n.nspname NOT LIKE 'pg\_toast\_temp\_%'
  AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_depend d
                  WHERE d.classid = 'pg_catalog.pg_class'::pg_catalog.regclass AND d.objid = c.oid AND d.deptype = 'e')`

// discover reads, on the database db is a handle on (the scenarios', or
// the template), the tables and sequences the team's schema made in any
// schema, saves the rows it seeded into the harness's schema, switches
// autovacuum off on the tables, and (for a superuser) writes the reset
// script and makes what watches for DDL. The template's copies have all
// of it.
func (s *pgSession) discover(ctx context.Context, db *sql.DB) error {
	rows, err := db.QueryContext(ctx, `
SELECT c.relkind = 'r', quote_ident(n.nspname) || '.' || quote_ident(c.relname),
       coalesce((SELECT string_agg(quote_ident(a.attname), ', ' ORDER BY a.attnum) FROM pg_catalog.pg_attribute a
                 WHERE a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped AND a.attgenerated = ''), '')
`+teamRelations+` AND c.relkind IN ('r', 'p') AND NOT c.relispartition
ORDER BY n.nspname, c.relname`)
	if err != nil {
		return err
	}
	var tables []pgTable
	for rows.Next() {
		var t pgTable
		if err := rows.Scan(&t.plain, &t.name, &t.cols); err != nil {
			rows.Close()
			return err
		}
		tables = append(tables, t)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	srows, err := db.QueryContext(ctx, `SELECT quote_ident(n.nspname) || '.' || quote_ident(c.relname) `+teamRelations+`
  AND c.relkind = 'S' ORDER BY n.nspname, c.relname`)
	if err != nil {
		return err
	}
	var seqs []string
	for srows.Next() {
		var name string
		if err := srows.Scan(&name); err != nil {
			srows.Close()
			return err
		}
		seqs = append(seqs, name)
	}
	srows.Close()
	if err := srows.Err(); err != nil {
		return err
	}
	var names []string
	for _, t := range tables {
		names = append(names, t.name)
		if t.plain {
			// A partitioned table takes no storage parameters.
			if _, err := db.ExecContext(ctx, "ALTER TABLE "+t.name+" SET (autovacuum_enabled = false)"); err != nil {
				return err
			}
		}
	}
	if len(names) > 0 {
		s.vacuum = "VACUUM " + strings.Join(names, ", ")
	}
	var objects int
	if err := db.QueryRowContext(ctx, "SELECT count(*) FROM pg_catalog.pg_largeobject_metadata").Scan(&objects); err != nil {
		return err
	}
	// Large objects are not rows of a table: a schema that leaves some
	// gets a new copy every scenario; otherwise the reset unlinks any.
	s.copyEvery = !s.fast || objects > 0
	if s.copyEvery {
		return nil
	}
	var restore []string
	for i := range tables {
		t := &tables[i]
		if err := db.QueryRowContext(ctx, "SELECT EXISTS (SELECT 1 FROM "+t.name+")").Scan(&t.rows); err != nil {
			return err
		}
		if !t.rows || t.cols == "" {
			continue
		}
		seed := pgx.Identifier{harnessSchema, fmt.Sprintf("seed_%d", i)}.Sanitize()
		if _, err := db.ExecContext(ctx, fmt.Sprintf("CREATE TABLE %s AS SELECT %s FROM %s", seed, t.cols, t.name)); err != nil {
			return err
		}
		restore = append(restore, fmt.Sprintf("INSERT INTO %s (%s) OVERRIDING SYSTEM VALUE SELECT %s FROM %s", t.name, t.cols, t.cols, seed))
	}
	for _, q := range seqs {
		var last int64
		var called bool
		if err := db.QueryRowContext(ctx, "SELECT last_value, is_called FROM "+q).Scan(&last, &called); err != nil {
			return err
		}
		restore = append(restore, fmt.Sprintf("SELECT pg_catalog.setval('%s', %d, %t)", strings.ReplaceAll(q, "'", "''"), last, called))
	}
	var b strings.Builder
	// The check first: a scenario that dropped a table would make the
	// DELETE fail.
	b.WriteString("SELECT idemcheck.unchanged(); BEGIN; ")
	// Deleting is much faster than TRUNCATE on PostgreSQL for small tables
	// (no new files to create and sync), with foreign keys and triggers
	// off.
	b.WriteString("SET LOCAL session_replication_role = replica; ")
	for _, t := range tables {
		fmt.Fprintf(&b, "DELETE FROM %s; ", t.name)
	}
	for _, r := range restore {
		b.WriteString(r + "; ")
	}
	b.WriteString("SELECT count(pg_catalog.lo_unlink(oid)) FROM pg_catalog.pg_largeobject_metadata; COMMIT")
	s.reset = b.String()
	// The watch last: the harness's own DDL above is no scenario's.
	if err := rawExec(ctx, db, watchScript); err != nil {
		// No PL/pgSQL in template1, say: copies it is.
		s.copyEvery = true
	}
	return nil
}
