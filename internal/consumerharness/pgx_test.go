package consumerharness

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/idemcheck/idemcheck/impl/contract/handler"
)

// pgxBalance is pgBalance written against pgx: it credits the user's
// balance and marks the event in one transaction, and refuses to run on
// any clock but the scenario's (now(), in and out of the transaction,
// must read a time of 2000, the scenario's year).
func pgxBalance(ctx context.Context, pool *pgxpool.Pool, m handler.Message) error {
	if m.Poisoned() {
		return handler.Poison(errors.New("no such account"))
	}
	var now time.Time
	if err := pool.QueryRow(ctx, `SELECT now()`).Scan(&now); err != nil {
		return err
	}
	if now.Year() != 2000 {
		return handler.Poison(fmt.Errorf("now() outside a transaction reads %s, not the scenario's time", now))
	}
	return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if err := tx.QueryRow(ctx, `SELECT now()`).Scan(&now); err != nil {
			return err
		}
		if now.Year() != 2000 {
			return handler.Poison(fmt.Errorf("now() in a transaction reads %s, not the scenario's time", now))
		}
		tag, err := tx.Exec(ctx, `INSERT INTO processed_events (event_id) VALUES ($1) ON CONFLICT DO NOTHING`, m.EventID)
		if err != nil || tag.RowsAffected() == 0 {
			return err
		}
		_, err = tx.Exec(ctx, `UPDATE accounts SET balance_cents = balance_cents + $1 WHERE user_id = $2`, m.Event.AmountCents, m.Event.UserID)
		return err
	})
}

func pgxBalanceConsumer() Consumer {
	return Consumer{Name: "pgx-balance", Schema: pgAccountsSchema, PgxHandler: pgxBalance,
		Effects: Aggregate("SELECT user_id, balance_cents FROM accounts"), Dedupe: "SELECT event_id FROM processed_events"}
}

// TestPgxDrawnScenariosReplayTheSame plays drawn scenarios of a correct
// pgx consumer twice each: the traces agree, nothing is flagged, and the
// workers' calls (their queries, begins, commits) are in the trace as
// the scheduler's points.
func TestPgxDrawnScenariosReplayTheSame(t *testing.T) {
	cfg := pgStarted(t)
	gen := Generator(12)
	crashes, begins := 0, 0
	for i := range 40 {
		s := gen.Example(i)
		a, err := replay(pgxBalanceConsumer(), s, cfg)
		if err != nil {
			t.Fatal(err)
		}
		b, err := replay(pgxBalanceConsumer(), s, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if a.Outcome.Trace.String() != b.Outcome.Trace.String() {
			t.Fatalf("two plays of scenario %d differ:\n%s\nthen:\n%s", i, a.Outcome.Trace, b.Outcome.Trace)
		}
		if a.Failed {
			t.Fatalf("flagged:\n%s", a.Report())
		}
		tr := a.Outcome.Trace.String()
		if strings.Contains(tr, " crashes at ") {
			crashes++
		}
		if strings.Contains(tr, " begin\n") {
			begins++
		}
	}
	if begins == 0 {
		t.Fatal("no begin of a pgx transaction in any trace")
	}
	if crashes == 0 {
		t.Fatal("no drawn scenario crashed a worker at a pgx call")
	}
}

// TestPgxWaitsForLocks: two workers' transactions on one event are open
// side by side; the second's mark waits for the first's row, as on the
// server, and gets the lock once the first transaction ended; the waiting
// transaction goes on (its statement ran under a savepoint the lock
// timeout rolled back to).
func TestPgxWaitsForLocks(t *testing.T) {
	dsn := pgDSN(t)
	res, err := Hunt(pgxBalanceConsumer(), Postgres(dsn), Checks(300), Seed(3))
	if err != nil {
		t.Fatal(err)
	}
	if res.Failed {
		t.Fatalf("flagged:\n%s", res.Report())
	}
	cfg := pgStarted(t)
	waited := false
	gen := Generator(16)
	for i := 0; i < 200 && !waited; i++ {
		out, err := replay(pgxBalanceConsumer(), gen.Example(i), cfg)
		if err != nil {
			t.Fatal(err)
		}
		tr := out.Outcome.Trace.String()
		waited = strings.Contains(tr, "waits for a lock at exec INSERT INTO processed_events") && strings.Contains(tr, "gets the lock at exec INSERT INTO processed_events")
		if waited {
			t.Log(tr)
		}
	}
	if !waited {
		t.Fatal("no drawn scenario made a worker's mark wait for another's transaction")
	}
}

// TestPgxNeedsPostgres: a PgxHandler on SQLite is bad input, said before
// any scenario.
func TestPgxNeedsPostgres(t *testing.T) {
	_, err := Hunt(pgxBalanceConsumer(), Checks(1))
	if !errors.Is(err, ErrBadInput) || !strings.Contains(err.Error(), "Postgres(dsn)") {
		t.Fatalf("want a bad input error naming Postgres(dsn), got %v", err)
	}
	if _, err := Explore(pgxBalanceConsumer(), Bounds{Events: []Fate{FateOK}, Workers: 2}); !errors.Is(err, ErrBadInput) {
		t.Fatalf("Explore of a PgxHandler: want a bad input error, got %v", err)
	}
	c := pgxBalanceConsumer()
	c.Handler = pgBalance
	if err := c.validate(); err == nil || !strings.Contains(err.Error(), "not several") {
		t.Fatalf("a Handler and a PgxHandler: want an error, got %v", err)
	}
}

// TestPgxRefusesWhatARunCannotIsolate: a pgx handler's CREATE ROLE is
// refused as a database/sql handler's is: bad input naming it, and no
// role made.
func TestPgxRefusesWhatARunCannotIsolate(t *testing.T) {
	dsn := pgDSN(t)
	c := pgxBalanceConsumer()
	c.PgxHandler = func(ctx context.Context, pool *pgxpool.Pool, m handler.Message) error {
		if _, err := pool.Exec(ctx, "CREATE ROLE idemcheck_test_pgx_reader"); err != nil {
			return err
		}
		return pgxBalance(ctx, pool, m)
	}
	_, err := Hunt(c, Checks(5), Postgres(dsn))
	if !errors.Is(err, ErrBadInput) || !strings.Contains(err.Error(), "CREATE ROLE idemcheck_test_pgx_reader") {
		t.Fatalf("a pgx handler's CREATE ROLE: %v, want a bad-input error naming it", err)
	}
	conn, err := pgx.Connect(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var made bool
	if err := conn.QueryRow(context.Background(), "SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = 'idemcheck_test_pgx_reader')").Scan(&made); err != nil || made {
		t.Fatalf("the role was made (%v, %v)", made, err)
	}
}

// pgxCrossed is pgCrossed written against pgx: two workers on u1 and u2
// deadlock.
func pgxCrossed(ctx context.Context, pool *pgxpool.Pool, m handler.Message) error {
	return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		other := map[string]string{"u1": "u2", "u2": "u1"}[m.Event.UserID]
		for _, u := range []string{m.Event.UserID, other} {
			if _, err := tx.Exec(ctx, `UPDATE accounts SET balance_cents = balance_cents + 0 WHERE user_id = $1`, u); err != nil {
				return err
			}
		}
		_, err := tx.Exec(ctx, `INSERT INTO processed_events (event_id) VALUES ($1)`, m.EventID)
		return err
	})
}

// TestPgxDeadlockAnswers40P01: two pgx workers that lock two rows in
// crossed orders wait for each other; the one given up gets PostgreSQL's
// deadlock error (40P01), its transaction aborted, and the other goes on,
// as on the server.
func TestPgxDeadlockAnswers40P01(t *testing.T) {
	c := Consumer{Name: "pgx-crossed", Schema: pgAccountsSchema, PgxHandler: pgxCrossed,
		Effects: PerEvent("SELECT event_id FROM processed_events")}
	trace := playCrossed(t, c, Postgres(pgDSN(t)))
	for _, want := range []string{"waits for a lock at exec UPDATE accounts", "answers error 40P01", "deadlock detected (SQLSTATE 40P01)", "gets the lock at exec UPDATE accounts"} {
		if !strings.Contains(trace, want) {
			t.Errorf("no %q in the trace:\n%s", want, trace)
		}
	}
}

// TestRerunnable: a statement the session may send again after a lock
// timeout ends no transaction and works no savepoint, in any of the
// statements of one text.
func TestRerunnable(t *testing.T) {
	for q, want := range map[string]bool{
		"UPDATE accounts SET balance_cents = 1":              true,
		"INSERT INTO t VALUES (1); INSERT INTO t VALUES (2)": true,
		"select 'commit'":            true,
		"COMMIT":                     false,
		"UPDATE t SET n = 1; COMMIT": false,
		"savepoint a":                false,
		"RELEASE SAVEPOINT a":        false,
		"ROLLBACK TO SAVEPOINT a":    false,
		"/* x */ begin":              false,
		"COPY t FROM STDIN":          false,
	} {
		if got := rerunnable([]string{q}); got != want {
			t.Errorf("rerunnable(%q) = %v, want %v", q, got, want)
		}
	}
}

// pgxWaitsOnItself marks the event in a transaction, then credits on
// another of the pool's connections, outside that transaction: the
// credit's INSERT waits for the mark's row lock, held by its own
// transaction, which nothing will release.
func pgxWaitsOnItself(ctx context.Context, pool *pgxpool.Pool, m handler.Message) error {
	return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `INSERT INTO processed_events (event_id) VALUES ($1)`, m.EventID); err != nil {
			return err
		}
		_, err := pool.Exec(ctx, `INSERT INTO processed_events (event_id) VALUES ($1) ON CONFLICT DO NOTHING`, m.EventID)
		return err
	})
}

// TestPgxWaitOnItselfIsGivenUp: a pgx handler that waits, outside its
// own transaction, for a lock that transaction holds gets the lock
// timeout (55P03, "canceling statement due to lock timeout") as on the
// database/sql route, the same when played twice; the handler rolls its
// transaction back, and, the wait being of its own making, no delivery
// counts it as a fault of the harness: it never applies the event and is
// flagged.
func TestPgxWaitOnItselfIsGivenUp(t *testing.T) {
	c := Consumer{Name: "pgx-waits-on-itself", Schema: pgAccountsSchema, PgxHandler: pgxWaitsOnItself,
		Effects: PerEvent("SELECT event_id FROM processed_events")}
	s := &Scenario{Version: 1, Workers: 1, Policy: DefaultPolicy, Events: []Event{{ID: "e1", User: "u1", Amount: 100}},
		Steps: []Step{runW(1), runW(1), runW(1), runW(1), runW(1), runW(1)}}
	var traces []string
	for range 2 {
		res, err := Replay(c, s, Postgres(pgDSN(t)))
		if err != nil {
			t.Fatal(err)
		}
		trace := res.Outcome.Trace.String()
		traces = append(traces, trace)
		for _, want := range []string{"gives up waiting at exec INSERT INTO processed_events", "canceling statement due to lock timeout", "w1 rollback"} {
			if !strings.Contains(trace, want) {
				t.Errorf("no %q in the trace:\n%s", want, trace)
			}
		}
		if slices.ContainsFunc(res.Outcome.Deliveries, func(d Delivery) bool {
			return slices.ContainsFunc(d.Faults, func(f Fault) bool { return f.Kind == FaultLockTimeout })
		}) {
			t.Errorf("a wait of the handler's own making counted as a fault of the harness: %+v", res.Outcome.Deliveries)
		}
		if _, ok := breachOf(res, LawHealthyApplied); !ok {
			t.Errorf("a handler that waits on itself never applies the event, yet:\n%s", res.Report())
		}
	}
	if len(traces) == 2 && traces[0] != traces[1] {
		t.Errorf("played twice, two traces:\n%s\nthen:\n%s", traces[0], traces[1])
	}
}
