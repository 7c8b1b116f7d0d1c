package consumerharness

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/idemcheck/idemcheck/impl/contract/handler"
	"github.com/idemcheck/idemcheck/internal/situation"
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

// deadlockBounds are the small worlds the model checker searches the
// crossed consumers in: e1 and e2 on two workers, which lock u1 and u2 in
// opposite orders, and one event with a duplicate, within a preemption;
// then e1 and e2 with a crash too (of a worker waiting in the cycle, of
// the one given up, of the one granted its locks).
var deadlockBounds = []Bounds{
	{Events: []Fate{FateOK, FateOK}, Workers: 2, Preemptions: 1},
	{Events: []Fate{FateOK}, Workers: 2, Preemptions: 1, Duplicates: 1},
	{Events: []Fate{FateOK, FateOK}, Workers: 2, Preemptions: 1, Crashes: 1},
}

// TestVerifyMySQLConsumerRetryingDeadlocks: the model checker verifies
// the consumer that runs its transaction again on 1213, every schedule
// ending within the step bound: the locks the server releases at the
// rollback go to the workers that waited for them, so the worker rolled
// back cannot take them back and meet the same deadlock again and again.
// The two-event worlds do meet the deadlock.
func TestVerifyMySQLConsumerRetryingDeadlocks(t *testing.T) {
	t.Parallel() // a long search: it runs beside the package's other long tests
	dsn := myDSN(t)
	c := crossedConsumer("my-crossed-retry", crossedCredit(func(context.Context, *sql.Tx, handler.Message, error) (bool, error) {
		return true, nil
	}))
	for i, b := range deadlockBounds {
		res, err := Explore(c, b, MySQL(dsn), VerifyTime(time.Minute))
		if err != nil || !res.Verified || res.Cut > 0 {
			t.Fatalf("want verified with no schedule cut at the step bound (%v):\n%s", err, res.Report())
		}
		if i != 1 && res.Coverage[situation.ConsumerLockWaitGivenUp] == 0 {
			t.Errorf("no schedule met the deadlock:\n%s", res.Report())
		}
		t.Logf("%s: %d schedules, %d states, %s", b, res.Schedules, res.States, res.Elapsed)
	}
	// As a team's test calls it, each schedule in a bubble of its own.
	Verify(t, c, deadlockBounds[0], MySQL(dsn), CorpusDir(t.TempDir()), VerifyTime(time.Minute))
}

// TestVerifyMySQLFindsASwallowedDeadlock: the model checker finds the
// consumer that acks after a 1213 losing the event its rolled-back
// transaction credited, and the counterexample replays with the same
// trace.
func TestVerifyMySQLFindsASwallowedDeadlock(t *testing.T) {
	dsn := myDSN(t)
	c := crossedConsumer("my-crossed-swallow", crossedCredit(func(context.Context, *sql.Tx, handler.Message, error) (bool, error) {
		return false, nil
	}))
	res, err := Explore(c, deadlockBounds[0], MySQL(dsn), VerifyTime(time.Minute))
	if err != nil || !res.Failed || res.Law != LawNothingLost {
		t.Fatalf("want %s broken (%v):\n%s", LawNothingLost, err, res.Report())
	}
	trace := res.Outcome.Trace.String()
	if !strings.Contains(trace, "InnoDB answers error 1213") {
		t.Errorf("the counterexample meets no deadlock:\n%s", trace)
	}
	again, err := Replay(c, res.Scenario, MySQL(dsn))
	if err != nil || again.Law != res.Law || again.Outcome.Trace.String() != trace {
		t.Fatalf("the counterexample does not replay with the same trace (%v):\n%s\nthen:\n%s", err, trace, again.Report())
	}
	t.Logf("%s: %d schedules, %d states, %s:\n%s", deadlockBounds[0], res.Schedules, res.States, res.Elapsed, res.Report())
}

// TestMySQLDeadlockReductionsLoseNoOutcome: in the worlds where the
// crossed consumers meet a deadlock, and the locks of the transaction
// rolled back go to the workers that waited, the reduced search meets the
// states and outcomes a brute force meets.
func TestMySQLDeadlockReductionsLoseNoOutcome(t *testing.T) {
	dsn := myDSN(t)
	for _, c := range []Consumer{
		crossedConsumer("my-crossed-retry", crossedCredit(func(context.Context, *sql.Tx, handler.Message, error) (bool, error) { return true, nil })),
		crossedConsumer("my-crossed-swallow", crossedCredit(func(context.Context, *sql.Tx, handler.Message, error) (bool, error) { return false, nil })),
	} {
		b := deadlockBounds[0]
		brute, bres := outcomesOf(t, c, b, MySQL(dsn), NoPOR(), NoCache())
		reduced, rres := outcomesOf(t, c, b, MySQL(dsn))
		if lost := diffSets(brute, reduced); len(lost) > 0 {
			t.Errorf("%s: the reduced search lost %d of %d states and outcomes:\n%s", c.Name, len(lost), len(brute), strings.Join(lost, "\n"))
		}
		if extra := diffSets(reduced, brute); len(extra) > 0 {
			t.Errorf("%s: the reduced search met %d states or outcomes the brute force did not:\n%s", c.Name, len(extra), strings.Join(extra, "\n"))
		}
		if bres.Coverage[situation.ConsumerLockWaitGivenUp] == 0 {
			t.Errorf("%s: the brute force met no deadlock", c.Name)
		}
		t.Logf("%s: %d states and outcomes; brute force %d schedules, reduced %d", c.Name, len(brute), bres.Schedules, rres.Schedules)
	}
}
