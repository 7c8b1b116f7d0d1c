package consumerharness

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/go-sql-driver/mysql"

	"github.com/idemcheck/idemcheck/impl/contract/handler"
)

// crossedScenario has two workers lock u1 and u2 in opposite orders
// until each waits for the other.
var crossedScenario = &Scenario{Version: 1, Workers: 2, Policy: DefaultPolicy,
	Events: []Event{{ID: "e1", User: "u1", Amount: 100}, {ID: "e2", User: "u2", Amount: 50}},
	Steps: []Step{runW(1), runW(1), runW(1), // w1: begin, credit u1
		{Op: OpRun, Worker: 2, Pick: 0}, runW(2), runW(2), // w2: e2, begin, credit u2
		runW(1), // w1 wants u2: waits
		runW(2), // w2 wants u1: waits
		runW(1)}}

// isDeadlock reports error 1213, the server's deadlock answer.
func isDeadlock(err error) bool {
	var me *mysql.MySQLError
	return errors.As(err, &me) && me.Number == 1213 && string(me.SQLState[:]) == "40001"
}

// crossedCredit credits the event's user, touching u1 then u2 for an
// odd event, u2 then u1 for an even one: two workers with e1 and e2 lock
// them in opposite orders. onDeadlock decides what a 1213 becomes: retry the whole
// transaction, or the handler's answer.
func crossedCredit(onDeadlock func(ctx context.Context, tx *sql.Tx, m handler.Message, err error) (retry bool, answer error)) handler.Func {
	return func(ctx context.Context, db *sql.DB, m handler.Message) error {
		for {
			retry, err := crossedOnce(ctx, db, m, onDeadlock)
			if !retry {
				return err
			}
		}
	}
}

func crossedOnce(ctx context.Context, db *sql.DB, m handler.Message, onDeadlock func(context.Context, *sql.Tx, handler.Message, error) (bool, error)) (bool, error) {
	if m.Event.AmountCents <= 0 {
		return false, handler.Poison(errors.New("bad amount"))
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return false, err
	}
	defer tx.Rollback()
	res, err := tx.ExecContext(ctx, `INSERT IGNORE INTO processed_events (event_id) VALUES (?)`, m.EventID)
	if err != nil {
		return false, err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return false, nil
	}
	order := []string{"u1", "u2"}
	if n := m.EventID[len(m.EventID)-1]; n%2 == 0 {
		order = []string{"u2", "u1"}
	}
	for _, u := range order {
		amount := int64(0)
		if u == m.Event.UserID {
			amount = m.Event.AmountCents
		}
		if _, err := tx.ExecContext(ctx, `UPDATE accounts SET balance_cents = balance_cents + ? WHERE user_id = ?`, amount, u); err != nil {
			if isDeadlock(err) {
				return onDeadlock(ctx, tx, m, err)
			}
			return false, err
		}
	}
	return false, tx.Commit()
}

func crossedConsumer(name string, h handler.Func) Consumer {
	return Consumer{Name: name, Schema: myAccountsSchema, Handler: h,
		Effects: Aggregate("SELECT user_id, balance_cents FROM accounts"), Dedupe: "SELECT event_id FROM processed_events"}
}

// TestMySQLDeadlockAnswers1213AndRollsBack: the worker given up in the
// cycle gets error 1213 (SQLSTATE 40001) with its transaction rolled
// back on the server, as InnoDB's detector answers: on its own
// connection, its credit and its processed row are gone.
func TestMySQLDeadlockAnswers1213AndRollsBack(t *testing.T) {
	dsn := myDSN(t)
	var mu sync.Mutex
	var seen []string
	c := crossedConsumer("my-crossed-credit", crossedCredit(func(ctx context.Context, tx *sql.Tx, m handler.Message, err error) (bool, error) {
		var balance, processed int64
		if qerr := tx.QueryRowContext(ctx, `SELECT (SELECT balance_cents FROM accounts WHERE user_id = ?), (SELECT COUNT(*) FROM processed_events WHERE event_id = ?)`,
			m.Event.UserID, m.EventID).Scan(&balance, &processed); qerr != nil {
			return false, qerr
		}
		mu.Lock()
		seen = append(seen, m.EventID+" "+m.Event.UserID)
		mu.Unlock()
		if balance != 0 || processed != 0 {
			t.Errorf("after 1213 %s's connection still sees its writes: balance %d, processed %d", m.EventID, balance, processed)
		}
		return false, err
	}))
	res, err := Replay(c, crossedScenario, MySQL(dsn))
	if err != nil {
		t.Fatal(err)
	}
	if res.Failed {
		t.Fatalf("flagged:\n%s", res.Report())
	}
	if len(seen) != 1 {
		t.Fatalf("%d handlers saw 1213 (%v), want the one given up:\n%s", len(seen), seen, res.Outcome.Trace)
	}
	trace := res.Outcome.Trace.String()
	for _, want := range []string{"a deadlock between workers, which the server would detect: InnoDB answers error 1213", "Error 1213 (40001)"} {
		if !strings.Contains(trace, want) {
			t.Errorf("the trace never says %q:\n%s", want, trace)
		}
	}
}

// TestMySQLConsumerRetryingDeadlocksIsNeverFlagged: a consumer that runs
// its transaction again on 1213 is never flagged, on the crossed schedule
// and on drawn ones.
func TestMySQLConsumerRetryingDeadlocksIsNeverFlagged(t *testing.T) {
	dsn := myDSN(t)
	c := crossedConsumer("my-crossed-retry", crossedCredit(func(context.Context, *sql.Tx, handler.Message, error) (bool, error) {
		return true, nil
	}))
	res, err := Replay(c, crossedScenario, MySQL(dsn))
	if err != nil {
		t.Fatal(err)
	}
	if res.Failed || !strings.Contains(res.Outcome.Trace.String(), "which the server would detect: InnoDB answers error 1213") {
		t.Fatalf("want no breach and a 1213 retried:\n%s", res.Report())
	}
	hunt, err := Hunt(c, Checks(60), Seed(1), MySQL(dsn))
	if err != nil {
		t.Fatal(err)
	}
	if hunt.Failed {
		t.Fatalf("flagged:\n%s", hunt.Report())
	}
}

// TestMySQLConsumerSwallowingADeadlockIsCaught: a consumer that takes
// 1213 for done and acks loses the event: its transaction was rolled
// back.
func TestMySQLConsumerSwallowingADeadlockIsCaught(t *testing.T) {
	dsn := myDSN(t)
	c := crossedConsumer("my-crossed-swallow", crossedCredit(func(context.Context, *sql.Tx, handler.Message, error) (bool, error) {
		return false, nil
	}))
	res, err := Replay(c, crossedScenario, MySQL(dsn))
	if err != nil {
		t.Fatal(err)
	}
	if !res.Failed || (res.Law != LawNothingLost && res.Law != LawHealthyApplied) {
		t.Fatalf("want the swallowed deadlock caught as a lost event:\n%s", res.Report())
	}
}
