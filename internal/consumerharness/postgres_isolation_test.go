package consumerharness_test

import (
	"bufio"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib"

	"github.com/idemcheck/idemcheck/impl/contract/handler"
	"github.com/idemcheck/idemcheck/internal/consumerharness"
)

// These tests are written as a team would write them, through the public
// API: a consumer whose schema makes a schema of its own, with a table in
// it, a sequence, an enum, a PL/pgSQL function and a trigger; handlers
// that make tables and indexes on first use or change the schema. Each
// would be flagged if anything of one scenario reached the next, and
// after the run nothing of them is left on the server.

// postgresDSN returns the PostgreSQL DSN, or skips.
func postgresDSN(tb testing.TB) string {
	tb.Helper()
	dsn := os.Getenv(consumerharness.PostgresEnv)
	if dsn == "" {
		tb.Skipf("%s is not set: skipping the consumer harness on PostgreSQL", consumerharness.PostgresEnv)
	}
	return dsn
}

// projectionSchema keeps a checkpoint in a schema of its own: a trigger
// on the ledger counts the entries there and stamps the time (now(), in a
// PL/pgSQL body); the entries are numbered by a sequence of that schema,
// and their kind is an enum of it.
const projectionSchema = `
CREATE SCHEMA IF NOT EXISTS projection;
CREATE TYPE projection.entry_kind AS ENUM ('credit', 'refund');
CREATE SEQUENCE projection.entry_no;
CREATE TABLE projection.checkpoint (
	consumer TEXT PRIMARY KEY,
	applied BIGINT NOT NULL DEFAULT 0,
	at TIMESTAMPTZ NOT NULL DEFAULT now()
);
INSERT INTO projection.checkpoint (consumer) VALUES ('ledger');
CREATE TABLE projection.processed (event_id TEXT PRIMARY KEY);
CREATE TABLE ledger (
	entry_no BIGINT PRIMARY KEY DEFAULT nextval('projection.entry_no'),
	event_id TEXT NOT NULL,
	amount_cents BIGINT NOT NULL,
	kind projection.entry_kind NOT NULL DEFAULT 'credit'
);
CREATE FUNCTION projection.count_entry() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	-- one more entry; the time is the scenario's
	UPDATE projection.checkpoint SET applied = applied + 1, at = now() WHERE consumer = 'ledger';
	RETURN NEW;
END $$;
CREATE TRIGGER ledger_counted AFTER INSERT ON ledger FOR EACH ROW EXECUTE FUNCTION projection.count_entry();`

// projectionHandler marks the event, enters it, and checks the
// checkpoint: it counts the ledger's entries (a checkpoint left by an
// earlier scenario would count more), it stands at the scenario's time
// (2000-01-01, not the machine's), and the entry's number is small (a
// sequence not set back would keep climbing). Any of these is a poison
// answer for a healthy event, which the harness flags.
func projectionHandler(ctx context.Context, db *sql.DB, m handler.Message) error {
	if m.Event.AmountCents <= 0 {
		return handler.Poison(errors.New("bad amount"))
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	res, err := tx.ExecContext(ctx, `INSERT INTO projection.processed VALUES ($1) ON CONFLICT DO NOTHING`, m.EventID)
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return nil
	}
	var no int64
	if err := tx.QueryRowContext(ctx, `INSERT INTO ledger (event_id, amount_cents) VALUES ($1, $2) RETURNING entry_no`,
		m.EventID, m.Event.AmountCents).Scan(&no); err != nil {
		return err
	}
	var applied, entries int64
	var at time.Time
	if err := tx.QueryRowContext(ctx, `SELECT c.applied, c.at, (SELECT count(*) FROM ledger) FROM projection.checkpoint c WHERE c.consumer = 'ledger'`).
		Scan(&applied, &at, &entries); err != nil {
		return err
	}
	switch {
	case applied != entries:
		return handler.Poison(fmt.Errorf("the checkpoint counts %d entries, the ledger has %d", applied, entries))
	case at.Year() != 2000:
		return handler.Poison(fmt.Errorf("the checkpoint's time is %s, not the scenario's", at))
	case no > 500:
		return handler.Poison(fmt.Errorf("entry number %d: the sequence was not set back", no))
	}
	return tx.Commit()
}

func projectionConsumer() consumerharness.Consumer {
	return consumerharness.Consumer{Name: "projection", Schema: projectionSchema, Handler: projectionHandler,
		Effects: consumerharness.PerEvent("SELECT event_id, amount_cents FROM ledger"), Dedupe: "SELECT event_id FROM projection.processed"}
}

// databases records the databases a consumer's handler ran on.
type databases struct {
	mu    sync.Mutex
	names map[string]bool
}

// watch wraps h so that it records its database.
func (d *databases) watch(h handler.Func) handler.Func {
	return func(ctx context.Context, db *sql.DB, m handler.Message) error {
		var name string
		if err := db.QueryRowContext(ctx, "SELECT current_database()").Scan(&name); err != nil {
			return err
		}
		d.mu.Lock()
		if d.names == nil {
			d.names = map[string]bool{}
		}
		d.names[name] = true
		d.mu.Unlock()
		return h(ctx, db, m)
	}
}

// leftNothing checks that nothing the tests' consumers make is on the
// DSN's database, and that the runs' databases are gone.
func leftNothing(t *testing.T, dsn string, dbs *databases) {
	t.Helper()
	admin, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	var left string
	err = admin.QueryRow(`SELECT concat_ws(' ',
  (SELECT string_agg('schema ' || nspname, ' ') FROM pg_namespace WHERE nspname IN ('projection', 'firstuse')),
  (SELECT string_agg('relation ' || relname, ' ') FROM pg_class WHERE relname IN ('checkpoint', 'entry_no', 'seen_events', 'ledger_by_event_firstuse')),
  (SELECT string_agg('function ' || proname, ' ') FROM pg_proc WHERE proname = 'count_entry'),
  (SELECT string_agg('type ' || typname, ' ') FROM pg_type WHERE typname = 'entry_kind'))`).Scan(&left)
	if err != nil {
		t.Fatal(err)
	}
	if left != "" {
		t.Errorf("left on the DSN's database: %s", left)
	}
	if len(dbs.names) == 0 {
		t.Fatal("the handler never ran")
	}
	for name := range dbs.names {
		for _, db := range []string{name, strings.TrimSuffix(name, "_w") + "_t"} {
			var n int
			if err := admin.QueryRow("SELECT count(*) FROM pg_database WHERE datname = $1", db).Scan(&n); err != nil {
				t.Fatal(err)
			}
			if n > 0 {
				t.Errorf("the run's database %s is left", db)
			}
		}
	}
}

// TestPostgresTheTeamsSchemaStaysInTheRun: a consumer whose every check
// fails if anything of a scenario reached the next (rows of another
// schema, a sequence, a checkpoint its trigger keeps) passes 200
// scenarios, reads the scenario's clock in its trigger, and leaves
// nothing behind.
func TestPostgresTheTeamsSchemaStaysInTheRun(t *testing.T) {
	dsn := postgresDSN(t)
	var dbs databases
	c := projectionConsumer()
	c.Handler = dbs.watch(c.Handler)
	consumerharness.Check(t, c, consumerharness.Checks(200), consumerharness.Postgres(dsn))
	leftNothing(t, dsn, &dbs)
}

// firstUseConsumer makes its library's schema, table and an index on
// first use (CREATE ... IF NOT EXISTS, every delivery) and dedupes
// through that table: it would lose events if the table and its rows
// reached the next scenario.
func firstUseConsumer(dbs *databases) consumerharness.Consumer {
	return consumerharness.Consumer{Name: "lib-on-first-use", Schema: `CREATE TABLE ledger (event_id TEXT NOT NULL, amount_cents BIGINT NOT NULL)`,
		Handler: dbs.watch(func(ctx context.Context, db *sql.DB, m handler.Message) error {
			if m.Event.AmountCents <= 0 {
				return handler.Poison(errors.New("bad amount"))
			}
			for _, ddl := range []string{`CREATE SCHEMA IF NOT EXISTS firstuse`,
				`CREATE TABLE IF NOT EXISTS firstuse.seen_events (event_id TEXT PRIMARY KEY, at TIMESTAMPTZ NOT NULL DEFAULT now())`,
				`CREATE INDEX IF NOT EXISTS ledger_by_event_firstuse ON ledger (event_id)`} {
				if _, err := db.ExecContext(ctx, ddl); err != nil {
					return err
				}
			}
			tx, err := db.BeginTx(ctx, nil)
			if err != nil {
				return err
			}
			defer tx.Rollback()
			res, err := tx.ExecContext(ctx, `INSERT INTO firstuse.seen_events (event_id) VALUES ($1) ON CONFLICT DO NOTHING`, m.EventID)
			if err != nil {
				return err
			}
			if n, _ := res.RowsAffected(); n == 0 {
				return nil
			}
			if _, err := tx.ExecContext(ctx, `INSERT INTO ledger VALUES ($1, $2)`, m.EventID, m.Event.AmountCents); err != nil {
				return err
			}
			return tx.Commit()
		}),
		// No dedupe query: the table is not there before the first
		// delivery.
		Effects: consumerharness.PerEvent("SELECT event_id, amount_cents FROM ledger")}
}

// TestPostgresWhatAHandlerMakesStaysInItsScenario: firstUseConsumer
// passes, and leaves nothing behind.
func TestPostgresWhatAHandlerMakesStaysInItsScenario(t *testing.T) {
	dsn := postgresDSN(t)
	var dbs databases
	consumerharness.Check(t, firstUseConsumer(&dbs), consumerharness.Checks(80), consumerharness.Postgres(dsn))
	leftNothing(t, dsn, &dbs)
}

// altersConsumer adds a column to the schema's table in the transaction
// of its first entry, so that it finds the column only with entries
// beside it; a column left by an earlier scenario would be alone, and
// poison the event.
func altersConsumer(dbs *databases) consumerharness.Consumer {
	return consumerharness.Consumer{Name: "alters", Schema: `CREATE TABLE ledger (event_id TEXT PRIMARY KEY, amount_cents BIGINT NOT NULL)`,
		Handler: dbs.watch(func(ctx context.Context, db *sql.DB, m handler.Message) error {
			if m.Event.AmountCents <= 0 {
				return handler.Poison(errors.New("bad amount"))
			}
			tx, err := db.BeginTx(ctx, nil)
			if err != nil {
				return err
			}
			defer tx.Rollback()
			var column, entries int
			if err := tx.QueryRowContext(ctx, `SELECT
  (SELECT count(*) FROM pg_attribute WHERE attrelid = 'ledger'::regclass AND attname = 'note' AND NOT attisdropped),
  (SELECT count(*) FROM ledger)`).Scan(&column, &entries); err != nil {
				return err
			}
			switch {
			case column == 0:
				if _, err := tx.ExecContext(ctx, `ALTER TABLE ledger ADD COLUMN note TEXT`); err != nil {
					return err
				}
			case entries == 0:
				return handler.Poison(errors.New("the column is there before any entry: an earlier scenario's"))
			}
			if _, err := tx.ExecContext(ctx, `INSERT INTO ledger (event_id, amount_cents, note) VALUES ($1, $2, 'x') ON CONFLICT DO NOTHING`,
				m.EventID, m.Event.AmountCents); err != nil {
				return err
			}
			return tx.Commit()
		}),
		Effects: consumerharness.PerEvent("SELECT event_id, amount_cents FROM ledger")}
}

// TestPostgresAHandlerThatAltersTheSchema: altersConsumer passes, and
// leaves nothing behind.
func TestPostgresAHandlerThatAltersTheSchema(t *testing.T) {
	dsn := postgresDSN(t)
	var dbs databases
	consumerharness.Check(t, altersConsumer(&dbs), consumerharness.Checks(12), consumerharness.Postgres(dsn))
	leftNothing(t, dsn, &dbs)
}

// BenchmarkPostgresSchemaChangingScenarios is the throughput of drawn
// scenarios whose handler changes the schema: firstUseConsumer's objects
// of its own are dropped between scenarios (undo), altersConsumer's
// column costs a new copy of the run's template database. The projection
// consumer, whose scenarios change no schema, is the reference.
func BenchmarkPostgresSchemaChangingScenarios(b *testing.B) {
	dsn := postgresDSN(b)
	for _, c := range []consumerharness.Consumer{projectionConsumer(), firstUseConsumer(&databases{}), altersConsumer(&databases{})} {
		b.Run(c.Name, func(b *testing.B) {
			res, err := consumerharness.Hunt(c, consumerharness.Checks(b.N), consumerharness.Seed(1), consumerharness.NoReduce(), consumerharness.Postgres(dsn))
			if err != nil || res.Failed {
				b.Fatalf("%v\n%s", err, res.Report())
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "scenarios/s")
		})
	}
}

// BenchmarkPostgresRun is what a run costs beside its scenarios: Replay
// of a scenario with one event on a one-table schema, whose run makes
// the run's database, runs the schema, plays, and drops the database.
func BenchmarkPostgresRun(b *testing.B) {
	dsn := postgresDSN(b)
	c := consumerharness.Consumer{Name: "one-table", Schema: `CREATE TABLE ledger (event_id TEXT PRIMARY KEY, amount_cents BIGINT NOT NULL)`,
		Handler: func(ctx context.Context, db *sql.DB, m handler.Message) error {
			_, err := db.ExecContext(ctx, `INSERT INTO ledger VALUES ($1, $2) ON CONFLICT DO NOTHING`, m.EventID, m.Event.AmountCents)
			return err
		},
		Effects: consumerharness.PerEvent("SELECT event_id, amount_cents FROM ledger")}
	s := &consumerharness.Scenario{Version: consumerharness.ScenarioVersion, Workers: 1, Policy: consumerharness.DefaultPolicy,
		Events: []consumerharness.Event{{ID: "e1", User: "u1", Amount: 100}}}
	for b.Loop() {
		if _, err := consumerharness.Replay(c, s, consumerharness.Postgres(dsn)); err != nil {
			b.Fatal(err)
		}
	}
}

// TestPostgresParallelRunsNeverMeet: two runs at once whose schemas both
// say CREATE SCHEMA projection (no IF NOT EXISTS) each get their own.
func TestPostgresParallelRunsNeverMeet(t *testing.T) {
	dsn := postgresDSN(t)
	c := projectionConsumer()
	c.Schema = strings.Replace(c.Schema, "CREATE SCHEMA IF NOT EXISTS projection", "CREATE SCHEMA projection", 1)
	for _, name := range []string{"a", "b"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			consumerharness.Check(t, c, consumerharness.Checks(40), consumerharness.Postgres(dsn))
		})
	}
}

// TestPostgresWhatBelongsToTheServerIsBadInput: a schema or a handler
// that would make a role, an extension or a role's membership is bad
// input naming the statement, and the role is not made.
func TestPostgresWhatBelongsToTheServerIsBadInput(t *testing.T) {
	dsn := postgresDSN(t)
	base := projectionConsumer()
	for stmt, object := range map[string]string{
		"CREATE ROLE idemcheck_test_reader": "role idemcheck_test_reader",
		"DO $$ BEGIN CREATE ROLE idemcheck_test_reader; EXCEPTION WHEN duplicate_object THEN NULL; END $$": "role idemcheck_test_reader",
		"CREATE EXTENSION IF NOT EXISTS idemcheck_no_such_extension":                                       "extension idemcheck_no_such_extension",
		"GRANT pg_read_all_data TO CURRENT_USER":                                                           "membership",
	} {
		c := base
		c.Schema = stmt + ";\n" + base.Schema
		_, err := consumerharness.Hunt(c, consumerharness.Checks(3), consumerharness.Postgres(dsn))
		if !errors.Is(err, consumerharness.ErrBadInput) || !strings.Contains(err.Error(), object) || !strings.Contains(err.Error(), "the schema failed at") {
			t.Errorf("%s: %v, want a bad-input error naming the statement and %s", stmt, err, object)
		}
	}
	c := base
	inner := c.Handler
	c.Handler = func(ctx context.Context, db *sql.DB, m handler.Message) error {
		if _, err := db.ExecContext(ctx, "CREATE ROLE idemcheck_test_reader"); err != nil {
			return err
		}
		return inner(ctx, db, m)
	}
	_, err := consumerharness.Hunt(c, consumerharness.Checks(5), consumerharness.Postgres(dsn))
	if !errors.Is(err, consumerharness.ErrBadInput) || !strings.Contains(err.Error(), "CREATE ROLE idemcheck_test_reader") {
		t.Errorf("a handler's CREATE ROLE: %v, want a bad-input error naming it", err)
	}
	admin, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	var n int
	if err := admin.QueryRow("SELECT count(*) FROM pg_roles WHERE rolname = 'idemcheck_test_reader'").Scan(&n); err != nil || n != 0 {
		t.Errorf("the role was made (%d, %v)", n, err)
	}
	// An extension template1 has is there already: IF NOT EXISTS passes.
	c = base
	c.Schema = "CREATE EXTENSION IF NOT EXISTS plpgsql;\n" + base.Schema
	if _, err := consumerharness.Hunt(c, consumerharness.Checks(3), consumerharness.Postgres(dsn)); err != nil {
		t.Errorf("CREATE EXTENSION IF NOT EXISTS plpgsql: %v", err)
	}
}

// TestPostgresASearchPathOfItsOwnIsNamed: a function whose search_path
// is its own, or a handler that sets one for its session, reads
// pg_catalog's now(), the machine's clock: the run says so.
func TestPostgresASearchPathOfItsOwnIsNamed(t *testing.T) {
	dsn := postgresDSN(t)
	function := projectionConsumer()
	function.Schema += `;
CREATE FUNCTION projection.stamp() RETURNS timestamptz LANGUAGE sql SET search_path = projection AS $$ SELECT now() $$`
	session := projectionConsumer()
	session.Handler = func(ctx context.Context, db *sql.DB, m handler.Message) error {
		if _, err := db.ExecContext(ctx, "SET search_path TO public, projection"); err != nil {
			return err
		}
		return db.QueryRowContext(ctx, "SELECT now()").Scan(new(time.Time))
	}
	s := &consumerharness.Scenario{Version: consumerharness.ScenarioVersion, Workers: 1, Policy: consumerharness.DefaultPolicy,
		Events: []consumerharness.Event{{ID: "e1", User: "u1", Amount: 100}}}
	for _, c := range []consumerharness.Consumer{function, session} {
		res, err := consumerharness.Replay(c, s, consumerharness.Postgres(dsn))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(strings.Join(res.MachineClock, "\n"), "search_path") {
			t.Errorf("the machine's clock, as the run names it: %q, want the search_path", res.MachineClock)
		}
	}
}

// killedRunEnv makes TestPostgresKilledRunHelper start a run and wait to
// be killed.
const killedRunEnv = "IDEMCHECK_TEST_KILLED_RUN"

// TestPostgresKilledRunHelper is the process TestPostgresAKilledRunLeavesNothing
// kills: it starts a run, prints its database's name and blocks in its
// handler, until killed.
func TestPostgresKilledRunHelper(t *testing.T) {
	if os.Getenv(killedRunEnv) == "" {
		t.Skipf("run by TestPostgresAKilledRunLeavesNothing, with %s set", killedRunEnv)
	}
	c := projectionConsumer()
	c.Handler = func(ctx context.Context, db *sql.DB, m handler.Message) error {
		var name string
		if err := db.QueryRowContext(ctx, "SELECT current_database()").Scan(&name); err != nil {
			return err
		}
		fmt.Println("database", name)
		_, err := os.Stdin.Read(make([]byte, 1)) // until killed
		return err
	}
	s := &consumerharness.Scenario{Version: consumerharness.ScenarioVersion, Workers: 1, Policy: consumerharness.DefaultPolicy,
		Events: []consumerharness.Event{{ID: "e1", User: "u1", Amount: 100}}}
	consumerharness.Replay(c, s, consumerharness.Postgres(postgresDSN(t)))
}

// TestPostgresAKilledRunLeavesNothing: a run killed (SIGKILL) leaves its
// databases until the next run starts, which drops them; a run still
// alive keeps its own.
func TestPostgresAKilledRunLeavesNothing(t *testing.T) {
	dsn := postgresDSN(t)
	admin, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	count := func(q string, args ...any) int {
		t.Helper()
		var n int
		if err := admin.QueryRow(q, args...).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	exists := func(db string) bool { return count("SELECT count(*) FROM pg_database WHERE datname = $1", db) > 0 }
	// start starts a helper process and returns it with its run's
	// database.
	start := func() (*exec.Cmd, string) {
		t.Helper()
		cmd := exec.Command(os.Args[0], "-test.run", "^TestPostgresKilledRunHelper$")
		cmd.Env = append(os.Environ(), killedRunEnv+"=1")
		stdin, err := cmd.StdinPipe() // held open: the helper blocks on it
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { stdin.Close() })
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if name, ok := strings.CutPrefix(sc.Text(), "database "); ok {
				go func() {
					for sc.Scan() {
					}
				}()
				return cmd, name
			}
		}
		t.Fatalf("the helper printed no database: %v", sc.Err())
		return nil, ""
	}
	// kill kills a helper, and waits until the server has ended its
	// connections.
	kill := func(cmd *exec.Cmd, db string) {
		t.Helper()
		cmd.Process.Kill()
		cmd.Wait()
		run := strings.TrimSuffix(db, "_w")
		for deadline := time.Now().Add(10 * time.Second); count("SELECT count(*) FROM pg_stat_activity WHERE application_name = $1", run) > 0; {
			if time.Now().After(deadline) {
				t.Fatalf("the killed run's connections outlived it")
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	// startRun starts (and ends) a run of this process: its start sweeps.
	startRun := func() {
		t.Helper()
		s := &consumerharness.Scenario{Version: consumerharness.ScenarioVersion, Workers: 1, Policy: consumerharness.DefaultPolicy,
			Events: []consumerharness.Event{{ID: "e1", User: "u1", Amount: 100}}}
		if _, err := consumerharness.Replay(projectionConsumer(), s, consumerharness.Postgres(dsn)); err != nil {
			t.Fatal(err)
		}
	}
	dead, deadDB := start()
	if !exists(deadDB) {
		t.Fatalf("the helper's database %s does not exist", deadDB)
	}
	kill(dead, deadDB)
	live, liveDB := start()
	startRun()
	if exists(deadDB) {
		t.Errorf("the killed run's database %s outlived the next start", deadDB)
	}
	if !exists(liveDB) {
		t.Fatalf("a start dropped the live run's database %s", liveDB)
	}
	kill(live, liveDB)
	startRun()
	if exists(liveDB) {
		t.Errorf("the killed run's database %s outlived the next start", liveDB)
	}
}
