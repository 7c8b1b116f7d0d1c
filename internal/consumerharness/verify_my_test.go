package consumerharness

import (
	"context"
	"database/sql"
	"errors"
	"testing"

	"github.com/idemcheck/idemcheck/impl/contract/handler"
)

// mySplitBalance is pgSplitBalance in MySQL's SQL: the check of the
// processed row is a statement of its own, outside the transaction that
// credits, so that two workers with a duplicate both pass it.
func mySplitBalance(ctx context.Context, db *sql.DB, m handler.Message) error {
	if m.Event.AmountCents <= 0 {
		return handler.Poison(errors.New("bad amount"))
	}
	var n int
	if err := db.QueryRowContext(ctx, `SELECT COUNT(*) FROM processed_events WHERE event_id = ?`, m.EventID).Scan(&n); err != nil || n > 0 {
		return err
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `UPDATE accounts SET balance_cents = balance_cents + ? WHERE user_id = ?`, m.Event.AmountCents, m.Event.UserID); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `INSERT IGNORE INTO processed_events (event_id) VALUES (?)`, m.EventID); err != nil {
		return err
	}
	return tx.Commit()
}

// TestVerifyOnMySQL: a correct consumer is verified and a broken one
// found on MySQL, and the reduced search of a small world meets the
// states and outcomes a brute force meets there too (the footprints of
// REPEATABLE READ snapshots and row locks are sound).
func TestVerifyOnMySQL(t *testing.T) {
	t.Parallel() // a long search: it runs beside the package's other long tests
	dsn := myDSN(t)
	b := Bounds{Events: []Fate{FateOK}, Workers: 2, Preemptions: 1, Duplicates: 1}
	res, err := Explore(myBalanceConsumer(), b, MySQL(dsn))
	if err != nil || !res.Verified || res.Backend != "mysql" {
		t.Fatalf("%v\n%s", err, res.Report())
	}
	split := Consumer{Name: "my-split", Schema: myAccountsSchema, Handler: mySplitBalance,
		Effects: Aggregate("SELECT user_id, balance_cents FROM accounts"), Dedupe: "SELECT event_id FROM processed_events"}
	res, err = Explore(split, b, MySQL(dsn))
	if err != nil || !res.Failed || res.Law != LawSingleCredit {
		t.Fatalf("%v\n%s", err, res.Report())
	}
	small := Bounds{Events: []Fate{FateOK}, Workers: 2, Preemptions: 2, Duplicates: 1}
	brute, _ := outcomesOf(t, split, small, MySQL(dsn), NoPOR(), NoCache())
	reduced, rres := outcomesOf(t, split, small, MySQL(dsn))
	if lost := diffSets(brute, reduced); len(lost) > 0 {
		t.Errorf("on MySQL the reduced search lost %d of %d states and outcomes: %v", len(lost), len(brute), lost)
	}
	if rres.SleepPruned == 0 {
		t.Errorf("no choice slept on MySQL: %+v", rres)
	}
}
