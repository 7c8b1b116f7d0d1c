package consumerharness

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/idemcheck/idemcheck/impl/contract/handler"
)

// myDSN returns the MySQL DSN, or skips.
func myDSN(t testing.TB) string {
	t.Helper()
	dsn := os.Getenv(MySQLEnv)
	if dsn == "" {
		t.Skipf("%s is not set: skipping the consumer harness on MySQL", MySQLEnv)
	}
	return dsn
}

const myAccountsSchema = `
CREATE TABLE accounts (user_id VARCHAR(32) PRIMARY KEY, balance_cents BIGINT NOT NULL);
INSERT INTO accounts VALUES ('u1', 0), ('u2', 0);
CREATE TABLE processed_events (event_id VARCHAR(32) PRIMARY KEY, seq BIGINT AUTO_INCREMENT UNIQUE);`

// myBalance is pgBalance in MySQL's SQL.
func myBalance(ctx context.Context, db *sql.DB, m handler.Message) error {
	if m.Event.AmountCents <= 0 {
		return handler.Poison(errors.New("bad amount"))
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `UPDATE accounts SET balance_cents = balance_cents + ? WHERE user_id = ?`, m.Event.AmountCents, m.Event.UserID); err != nil {
		return err
	}
	res, err := tx.ExecContext(ctx, `INSERT IGNORE INTO processed_events (event_id) VALUES (?)`, m.EventID)
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return nil // a duplicate: the deferred rollback undoes the credit
	}
	return tx.Commit()
}

func myBalanceConsumer() Consumer {
	return Consumer{Name: "my-balance", Schema: myAccountsSchema, Handler: myBalance,
		Effects: Aggregate("SELECT user_id, balance_cents FROM accounts"), Dedupe: "SELECT event_id FROM processed_events"}
}

// myCrossed is pgCrossed in MySQL's SQL: two workers on u1 and u2
// deadlock.
func myCrossed(ctx context.Context, db *sql.DB, m handler.Message) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	other := map[string]string{"u1": "u2", "u2": "u1"}[m.Event.UserID]
	for _, u := range []string{m.Event.UserID, other} {
		if _, err := tx.ExecContext(ctx, `UPDATE accounts SET balance_cents = balance_cents + 0 WHERE user_id = ?`, u); err != nil {
			return err
		}
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO processed_events (event_id) VALUES (?)`, m.EventID); err != nil {
		return err
	}
	return tx.Commit()
}

func TestMySQLLockWaitParksTheWaiterAndReplaysTheSame(t *testing.T) {
	dsn := myDSN(t)
	first, err := Replay(myBalanceConsumer(), contended, MySQL(dsn))
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
	if first.Outcome.Backend != "mysql" {
		t.Errorf("played on %q", first.Outcome.Backend)
	}
	for range 3 {
		again, err := Replay(myBalanceConsumer(), contended, MySQL(dsn))
		if err != nil {
			t.Fatal(err)
		}
		if got := again.Outcome.Trace.String(); got != trace {
			t.Fatalf("the same scenario gave another trace on MySQL:\n%s\nthen:\n%s", trace, got)
		}
	}
}

func TestMySQLDeadlockIsResolvedNotHung(t *testing.T) {
	c := Consumer{Name: "my-crossed", Schema: myAccountsSchema, Handler: myCrossed,
		Effects: PerEvent("SELECT event_id FROM processed_events")}
	trace := playCrossed(t, c, MySQL(myDSN(t)))
	if !strings.Contains(trace, "gives up waiting") || !strings.Contains(trace, "a deadlock between workers, which the server would detect") ||
		!strings.Contains(trace, "Error 1213") {
		t.Errorf("the deadlock was not answered as the server's detector would:\n%s", trace)
	}
}

// TestMySQLDrawnScenariosReplayTheSame plays drawn scenarios twice each and
// compares the traces: on MySQL too they are the same, byte for byte.
func TestMySQLDrawnScenariosReplayTheSame(t *testing.T) {
	cfg := newConfig([]Option{MySQL(myDSN(t))})
	stop, err := cfg.start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	gen := Generator(12)
	for i := range 40 {
		s := gen.Example(i)
		a, err := replay(myBalanceConsumer(), s, cfg)
		if err != nil {
			t.Fatal(err)
		}
		b, err := replay(myBalanceConsumer(), s, cfg)
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

func TestMySQLBadInputIsAClearError(t *testing.T) {
	dsn := myDSN(t)
	_, err := Hunt(Consumer{Schema: "CREATE TABLE ledger (", Handler: myBalance, Effects: PerEvent("SELECT 1")}, Checks(5), MySQL(dsn))
	if !errors.Is(err, ErrBadInput) || !strings.Contains(err.Error(), `the schema failed at "CREATE TABLE ledger ("`) {
		t.Fatalf("got %v, want a bad-input error naming the statement", err)
	}
	_, err = Hunt(myBalanceConsumer(), Checks(5), MySQL("nobody@tcp(127.0.0.1:1)/none?timeout=2s"))
	if !errors.Is(err, ErrBadInput) || !strings.Contains(err.Error(), "start the mysql backend") {
		t.Fatalf("got %v, want an error about the unreachable server", err)
	}
}

// myFirstUse makes its table on first use, as a library does, then
// credits like myBalance: every scenario after one that made it starts
// on the database made anew.
func myFirstUse(ctx context.Context, db *sql.DB, m handler.Message) error {
	if _, err := db.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS audit (event_id VARCHAR(32) NOT NULL)`); err != nil {
		return err
	}
	if err := myBalance(ctx, db, m); err != nil {
		return err
	}
	_, err := db.ExecContext(ctx, `INSERT INTO audit (event_id) VALUES (?)`, m.EventID)
	return err
}

func TestMySQLTableMadeOnFirstUseIsNeverFlagged(t *testing.T) {
	dsn := myDSN(t)
	c := myBalanceConsumer()
	c.Name, c.Handler = "my-first-use", myFirstUse
	res, err := Hunt(c, Checks(30), Seed(1), MySQL(dsn))
	if err != nil {
		t.Fatal(err)
	}
	if res.Failed {
		t.Fatalf("flagged:\n%s", res.Report())
	}
}
