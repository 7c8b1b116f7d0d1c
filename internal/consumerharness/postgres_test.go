package consumerharness

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/impl/contract/handler"
)

// pgDSN returns the PostgreSQL DSN, or skips.
func pgDSN(t testing.TB) string {
	t.Helper()
	dsn := os.Getenv(PostgresEnv)
	if dsn == "" {
		t.Skipf("%s is not set: skipping the consumer harness on PostgreSQL", PostgresEnv)
	}
	return dsn
}

const pgAccountsSchema = `
CREATE TABLE accounts (user_id TEXT PRIMARY KEY, balance_cents BIGINT NOT NULL);
INSERT INTO accounts VALUES ('u1', 0), ('u2', 0);
CREATE TABLE processed_events (event_id TEXT PRIMARY KEY, seq BIGSERIAL);`

// pgBalance credits the user's balance and marks the event in one
// transaction; two workers on one user contend on the user's row.
func pgBalance(ctx context.Context, db *sql.DB, m handler.Message) error {
	if m.Event.AmountCents <= 0 {
		return handler.Poison(errors.New("bad amount"))
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `UPDATE accounts SET balance_cents = balance_cents + $1 WHERE user_id = $2`, m.Event.AmountCents, m.Event.UserID); err != nil {
		return err
	}
	res, err := tx.ExecContext(ctx, `INSERT INTO processed_events (event_id) VALUES ($1) ON CONFLICT DO NOTHING`, m.EventID)
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return nil // a duplicate: the deferred rollback undoes the credit
	}
	return tx.Commit()
}

func pgBalanceConsumer() Consumer {
	return Consumer{Name: "pg-balance", Schema: pgAccountsSchema, Handler: pgBalance,
		Effects: Aggregate("SELECT user_id, balance_cents FROM accounts"), Dedupe: "SELECT event_id FROM processed_events"}
}

// pgStarted is a configuration on PostgreSQL whose run lasts the test.
func pgStarted(t *testing.T) config {
	cfg := newConfig([]Option{Postgres(pgDSN(t))})
	stop, err := cfg.start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	return cfg
}

func runW(w int) Step { return Step{Op: OpRun, Worker: w} }

// contended: w1 holds u1's row; w2 updates it and waits, is retried
// while w1 still holds it, then w1 commits and w2 gets the lock.
var contended = &Scenario{Version: 1, Workers: 2, Policy: DefaultPolicy,
	Events: []Event{{ID: "e1", User: "u1", Amount: 100}, {ID: "e2", User: "u1", Amount: 50}},
	Steps: []Step{runW(1), runW(1), runW(1), // e1: begin, update
		runW(2), runW(2), runW(2), // e2: begin, update: waits
		runW(2),          // still waits
		runW(1), runW(1), // insert, commit: the lock goes
		runW(2), runW(2), runW(2), runW(2)}}

func TestPostgresLockWaitParksTheWaiterAndReplaysTheSame(t *testing.T) {
	dsn := pgDSN(t)
	first, err := Replay(pgBalanceConsumer(), contended, Postgres(dsn))
	if err != nil {
		t.Fatal(err)
	}
	if first.Failed {
		t.Fatalf("flagged:\n%s", first.Report())
	}
	trace := first.Outcome.Trace.String()
	for _, want := range []string{"w2 waits for a lock at exec UPDATE accounts", "w2 still waits", "w2 gets the lock"} {
		if !strings.Contains(trace, want) {
			t.Errorf("the trace never shows %q:\n%s", want, trace)
		}
	}
	if got := first.Outcome.Quiet.Rows; len(got) != 2 || got[0][1] != "150" {
		t.Errorf("balances once quiet %v, want u1 at 150", got)
	}
	for range 3 {
		again, err := Replay(pgBalanceConsumer(), contended, Postgres(dsn))
		if err != nil {
			t.Fatal(err)
		}
		if got := again.Outcome.Trace.String(); got != trace {
			t.Fatalf("the same scenario gave another trace on PostgreSQL:\n%s\nthen:\n%s", trace, got)
		}
	}
}

// pgCrossed locks the event's user's row, then the other user's: two
// workers on u1 and u2 deadlock.
func pgCrossed(ctx context.Context, db *sql.DB, m handler.Message) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	other := map[string]string{"u1": "u2", "u2": "u1"}[m.Event.UserID]
	for _, u := range []string{m.Event.UserID, other} {
		if _, err := tx.ExecContext(ctx, `UPDATE accounts SET balance_cents = balance_cents + 0 WHERE user_id = $1`, u); err != nil {
			return err
		}
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO processed_events (event_id) VALUES ($1)`, m.EventID); err != nil {
		return err
	}
	return tx.Commit()
}

// playCrossed plays, twice, the scenario in which two workers of c lock
// u1's and u2's rows in crossed orders and wait for each other: neither
// play is flagged, both give the same trace (returned), and the lock
// timeout the deadlock forced is a fault of the harness in the delivery
// that got it.
func playCrossed(t *testing.T, c Consumer, db Option) string {
	t.Helper()
	s := &Scenario{Version: 1, Workers: 2, Policy: DefaultPolicy,
		Events: []Event{{ID: "e1", User: "u1", Amount: 100}, {ID: "e2", User: "u2", Amount: 50}},
		Steps: []Step{runW(1), runW(1), runW(1), // w1: begin, lock u1
			{Op: OpRun, Worker: 2, Pick: 0}, runW(2), runW(2), // w2: e2, begin, lock u2
			runW(1), // w1 wants u2: waits
			runW(2), // w2 wants u1: waits
			runW(1)}}
	var traces []string
	for range 2 {
		res, err := Replay(c, s, db)
		if err != nil {
			t.Fatal(err)
		}
		if res.Failed {
			t.Fatalf("flagged:\n%s", res.Report())
		}
		traces = append(traces, res.Outcome.Trace.String())
		if !slices.ContainsFunc(res.Outcome.Deliveries, func(d Delivery) bool {
			return slices.ContainsFunc(d.Faults, func(f Fault) bool { return f.Kind == FaultLockTimeout })
		}) {
			t.Errorf("no delivery records the forced lock timeout as a fault: %+v", res.Outcome.Deliveries)
		}
	}
	if traces[0] != traces[1] {
		t.Errorf("the deadlock played twice gave two traces:\n%s\nthen:\n%s", traces[0], traces[1])
	}
	return traces[0]
}

func TestPostgresDeadlockIsResolvedNotHung(t *testing.T) {
	c := Consumer{Name: "pg-crossed", Schema: pgAccountsSchema, Handler: pgCrossed,
		Effects: PerEvent("SELECT event_id FROM processed_events")}
	trace := playCrossed(t, c, Postgres(pgDSN(t)))
	if !strings.Contains(trace, "gives up waiting") || !strings.Contains(trace, "answers error 40P01") ||
		!strings.Contains(trace, `nacks e1: "ERROR: deadlock detected (SQLSTATE 40P01)"`) {
		t.Errorf("the deadlock was not answered as PostgreSQL's detector does (40P01):\n%s", trace)
	}
}

func TestPostgresBadInputIsAClearError(t *testing.T) {
	dsn := pgDSN(t)
	_, err := Hunt(Consumer{Schema: "CREATE TABLE ledger (", Handler: adr, Effects: PerEvent("SELECT 1")}, Checks(5), Postgres(dsn))
	if !errors.Is(err, ErrBadInput) || !strings.Contains(err.Error(), `the schema failed at "CREATE TABLE ledger ("`) {
		t.Fatalf("got %v, want a bad-input error naming the statement", err)
	}
	_, err = Hunt(Consumer{Schema: pgAccountsSchema, Handler: pgBalance, Effects: PerEvent("SELECT nope FROM accounts")}, Checks(5), Postgres(dsn))
	if !errors.Is(err, ErrBadInput) || !strings.Contains(err.Error(), "the effects query") {
		t.Fatalf("got %v, want a bad-input error about the effects query", err)
	}
	_, err = Hunt(pgBalanceConsumer(), Checks(5), Postgres("postgres://nobody@127.0.0.1:1/none?sslmode=disable&connect_timeout=2"))
	if !errors.Is(err, ErrBadInput) || !strings.Contains(err.Error(), "start the postgres backend") {
		t.Fatalf("got %v, want an error about the unreachable server", err)
	}
}

// TestPostgresDrawnScenariosReplayTheSame plays drawn scenarios twice each
// and compares the traces: on PostgreSQL too they are the same, byte for
// byte, for a consumer that reads no server clock.
func TestPostgresDrawnScenariosReplayTheSame(t *testing.T) {
	cfg := pgStarted(t)
	gen := Generator(12)
	for i := range 40 {
		s := gen.Example(i)
		a, err := replay(pgBalanceConsumer(), s, cfg)
		if err != nil {
			t.Fatal(err)
		}
		b, err := replay(pgBalanceConsumer(), s, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if a.Outcome.Trace.String() != b.Outcome.Trace.String() {
			t.Fatalf("two plays of scenario %d differ:\n%s\nthen:\n%s", i, a.Outcome.Trace, b.Outcome.Trace)
		}
		if a.Failed {
			t.Fatalf("flagged:\n%s", a.Report())
		}
	}
}

// BenchmarkPostgresTracesRepeat measures what is reproducible on
// PostgreSQL: b.N drawn scenarios, each played twice against two
// consumers (pg-balance, and pg-crossed, which deadlocks), on one run. It
// reports the scenarios whose two traces differ (0 is the claim), those
// with lock waits, and the ones flagged (0: both consumers are correct).
func BenchmarkPostgresTracesRepeat(b *testing.B) {
	dsn := pgDSN(b)
	cfg := newConfig([]Option{Postgres(dsn)})
	stop, err := cfg.start()
	if err != nil {
		b.Fatal(err)
	}
	defer stop()
	crossed := Consumer{Name: "pg-crossed", Schema: pgAccountsSchema, Handler: pgCrossed, Effects: PerEvent("SELECT event_id FROM processed_events")}
	gen := Generator(16)
	differ, waits, flagged := 0, 0, 0
	i := 0
	for b.Loop() {
		s := gen.Example(i)
		i++
		for _, c := range []Consumer{pgBalanceConsumer(), crossed} {
			first, err := replay(c, s, cfg)
			if err != nil {
				b.Fatal(err)
			}
			again, err := replay(c, s, cfg)
			if err != nil {
				b.Fatal(err)
			}
			trace := first.Outcome.Trace.String()
			if trace != again.Outcome.Trace.String() {
				differ++
			}
			if strings.Contains(trace, "waits for a lock") {
				waits++
			}
			if first.Failed || again.Failed {
				flagged++
			}
		}
	}
	b.ReportMetric(float64(2*i), "scenario-pairs")
	b.ReportMetric(float64(differ), "differing")
	b.ReportMetric(float64(waits), "with-waits")
	b.ReportMetric(float64(flagged), "flagged")
}

// TestPostgresTheHandlersClockIsTheScenarios: on PostgreSQL too, the
// handler's time.Now is the scenario's, and so is the server's now().
func TestPostgresTheHandlersClockIsTheScenarios(t *testing.T) {
	var seen []string
	var server time.Time
	c := pgBalanceConsumer()
	c.Handler = func(ctx context.Context, db *sql.DB, m handler.Message) error {
		seen = append(seen, fmt.Sprintf("%s %s", m.EventID, time.Now().UTC().Format(time.RFC3339Nano)))
		if err := db.QueryRowContext(ctx, "SELECT now()").Scan(&server); err != nil {
			return err
		}
		return pgBalance(ctx, db, m)
	}
	s := &Scenario{Version: 1, Workers: 1, Policy: DefaultPolicy, Events: []Event{{ID: "e1", User: "u1", Amount: 100}, {ID: "e2", User: "u1", Amount: 200}},
		Steps: []Step{runW(1), {Op: OpAdvance, Ms: 1000}, runW(1)}}
	res, err := Replay(c, s, Postgres(pgDSN(t)))
	if err != nil || res.Failed {
		t.Fatalf("%v\n%s", err, res.Report())
	}
	if got := strings.Join(seen, "\n"); !strings.HasPrefix(got, "e1 2000-01-01T00:00:00Z\n") || !strings.Contains(got, "e2 2000-01-01T00:00:01Z") {
		t.Fatalf("the handler's clock is not the scenario's:\n%s", got)
	}
	if !server.Equal(time.Date(2000, 1, 1, 0, 0, 1, 0, time.UTC)) {
		t.Fatalf("the server's now() was %s, not the scenario's", server)
	}
}
