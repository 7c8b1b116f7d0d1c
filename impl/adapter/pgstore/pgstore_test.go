package pgstore_test

import (
	"context"
	"fmt"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/idemcheck/idemcheck/impl/adapter/pgstore"
	"github.com/idemcheck/idemcheck/impl/adapter/sqlstore/sqlstoretest"
	"github.com/idemcheck/idemcheck/impl/contract/clock"
	"github.com/idemcheck/idemcheck/impl/contract/store"
	"github.com/idemcheck/idemcheck/impl/contract/store/storetest"
)

// dsn returns the test database's connection string, or skips t.
func dsn(t testing.TB) string {
	t.Helper()
	d := os.Getenv(pgstore.DSNEnv)
	if d == "" {
		t.Skipf("PostgreSQL tests need a database: set %s, e.g. %s=postgres://postgres@127.0.0.1:5432/test?sslmode=disable", pgstore.DSNEnv, pgstore.DSNEnv)
	}
	return d
}

var schemas atomic.Int64

// uniqueSchema names a schema no other store of any test process uses.
func uniqueSchema() string {
	return fmt.Sprintf("idemcheck_test_%d_%d", os.Getpid(), schemas.Add(1))
}

// open opens a store in a fresh schema; the schema is dropped when t ends.
func open(t testing.TB, c clock.Source) *pgstore.Store {
	t.Helper()
	s, err := pgstore.Open(context.Background(), pgstore.Options{DSN: dsn(t), Schema: uniqueSchema(), Clock: c})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		if err := s.DropSchema(context.Background()); err != nil {
			t.Errorf("DropSchema: %v", err)
		}
	})
	return s
}

func openStore(t *testing.T, c clock.Source) store.Store { return open(t, c) }

// TestConformance runs the contract's suite, each subtest in a fresh schema.
func TestConformance(t *testing.T) {
	dsn(t) // skip once, not once per subtest
	storetest.Run(t, openStore)
}

// TestCrash: a unit of work crashed before or inside its commit lands
// nothing and leaves no row lock behind.
func TestCrash(t *testing.T) {
	dsn(t)
	sqlstoretest.RunCrash(t, openStore)
}

// TestDatabaseClock: without a Clock, PostgreSQL's clock is the store's time.
func TestDatabaseClock(t *testing.T) { sqlstoretest.RunDatabaseClock(t, openStore) }

// monitor returns a connection of its own for looking at the server.
func monitor(t *testing.T) *pgx.Conn {
	t.Helper()
	c, err := pgx.Connect(t.Context(), dsn(t))
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { c.Close(context.Background()) })
	return c
}

// openTransactions counts the store's sessions the server sees inside a
// transaction.
func openTransactions(t *testing.T, m *pgx.Conn, s *pgstore.Store) int {
	t.Helper()
	var n int
	err := m.QueryRow(t.Context(), `SELECT count(*) FROM pg_stat_activity
		WHERE application_name = $1 AND state LIKE 'idle in transaction%'`, pgstore.ApplicationName(s.Schema())).Scan(&n)
	if err != nil {
		t.Fatalf("pg_stat_activity: %v", err)
	}
	return n
}

// eventually polls cond until it holds or a deadline passes: the server
// notices a dropped connection asynchronously.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: still not so after 10 s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestCrashEndsServerSession: the server itself sees a crashed unit's
// session end, with its transaction.
func TestCrashEndsServerSession(t *testing.T) {
	ctx := t.Context()
	m := monitor(t)
	s := open(t, clock.NewVirtual(1_000_000))
	k := store.Key{Consumer: "ledger", ID: "e1"}
	c, err := s.Claim(ctx, k, 1_000)
	if err != nil {
		t.Fatal(err)
	}
	tx, err := s.Begin(ctx, k, c.Token)
	if err != nil {
		t.Fatal(err)
	}
	if n := openTransactions(t, m, s); n != 1 {
		t.Fatalf("%d sessions in a transaction after Begin, want 1", n)
	}
	tx.(store.Crasher).Crash()
	eventually(t, "crashed session gone", func() bool { return openTransactions(t, m, s) == 0 })
}

// TestCloseEndsOpenUnits: Close ends the sessions of units of work a run
// left open, so a long campaign does not leak connections.
func TestCloseEndsOpenUnits(t *testing.T) {
	ctx := t.Context()
	m := monitor(t)
	s := open(t, clock.NewVirtual(1_000_000))
	for _, id := range []string{"a", "b"} {
		k := store.Key{Consumer: "ledger", ID: id}
		c, err := s.Claim(ctx, k, 1_000)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Begin(ctx, k, c.Token); err != nil {
			t.Fatal(err)
		}
	}
	if n := openTransactions(t, m, s); n != 2 {
		t.Fatalf("%d sessions in a transaction, want 2", n)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	eventually(t, "sessions of open units gone after Close", func() bool { return openTransactions(t, m, s) == 0 })
	if _, err := s.Claim(ctx, store.Key{ID: "late"}, 1); err == nil {
		t.Errorf("Claim after Close succeeded")
	}
}

// TestSchemas: stores in different schemas are isolated; reopening a schema
// finds its data and keeps its token sequence; DropSchema removes it; a
// schema name that would need quoting is refused.
func TestSchemas(t *testing.T) {
	ctx := t.Context()
	clk := clock.NewVirtual(1_000_000)
	a, b := open(t, clk), open(t, clk)
	k := store.Key{Consumer: "ledger", ID: "e1"}
	first, err := a.Claim(ctx, k, 10)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok, err := b.Get(ctx, k); err != nil || ok {
		t.Errorf("other schema's Get = %v, %v; want no record", ok, err)
	}
	again, err := pgstore.Open(ctx, pgstore.Options{DSN: dsn(t), Schema: a.Schema(), Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	clk.Advance(10)
	c, err := again.Claim(ctx, k, 10)
	if err != nil || c.Outcome != store.Acquired || !c.Takeover || c.Token <= first.Token {
		t.Errorf("claim on the reopened schema = %+v, %v; want a takeover with a token above %d", c, err, first.Token)
	}

	if err := b.DropSchema(ctx); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := monitor(t).QueryRow(ctx, `SELECT count(*) FROM information_schema.schemata WHERE schema_name = $1`, b.Schema()).Scan(&n); err != nil || n != 0 {
		t.Errorf("schema %s after DropSchema: %d found (%v), want none", b.Schema(), n, err)
	}
	if _, err := pgstore.Open(ctx, pgstore.Options{DSN: dsn(t), Schema: `x"; DROP TABLE y; --`}); err == nil {
		t.Errorf("Open accepted a schema name that needs quoting")
	}
}
