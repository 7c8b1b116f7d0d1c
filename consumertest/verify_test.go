package consumertest

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/idemcheck/idemcheck/impl/contract/handler"
)

// The soundness of Verify's reductions: the partial-order reduction and
// the state caching must not lose an outcome a brute-force search of the
// same bounds reaches.

// splitCheck checks in one transaction and applies in another: two
// workers both pass the check.
func splitCheck(ctx context.Context, db *sql.DB, m handler.Message) error {
	if m.Event.AmountCents <= 0 {
		return handler.Poison(errors.New("bad amount"))
	}
	var n int
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM processed_events WHERE event_id = ?`, m.EventID).Scan(&n); err != nil || n > 0 {
		return err
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `INSERT INTO ledger VALUES (?, ?)`, m.EventID, m.Event.AmountCents); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO processed_events VALUES (?) ON CONFLICT DO NOTHING`, m.EventID); err != nil {
		return err
	}
	return tx.Commit()
}

// autocommit runs every statement on its own: check, credit, mark. Its
// statements on different events touch different rows.
func autocommit(ctx context.Context, db *sql.DB, m handler.Message) error {
	if m.Event.AmountCents <= 0 {
		return handler.Poison(errors.New("bad amount"))
	}
	var n int
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM processed_events WHERE event_id = $1`, m.EventID).Scan(&n); err != nil || n > 0 {
		return err
	}
	if _, err := db.ExecContext(ctx, `INSERT INTO ledger (event_id, amount_cents) VALUES ($1, $2)`, m.EventID, m.Event.AmountCents); err != nil {
		return err
	}
	_, err := db.ExecContext(ctx, `INSERT INTO processed_events (event_id) VALUES ($1)`, m.EventID)
	return err
}

// memo is a Worker that remembers the ids it handled in memory.
func memo(string) (handler.Func, io.Closer, error) {
	var mu sync.Mutex
	seen := map[string]bool{}
	return func(ctx context.Context, db *sql.DB, m handler.Message) error {
		if m.Event.AmountCents <= 0 {
			return handler.Poison(errors.New("bad amount"))
		}
		mu.Lock()
		done := seen[m.EventID]
		mu.Unlock()
		if done {
			return nil
		}
		if _, err := db.ExecContext(ctx, `INSERT INTO ledger VALUES (?, ?)`, m.EventID, m.Event.AmountCents); err != nil {
			return err
		}
		mu.Lock()
		seen[m.EventID] = true
		mu.Unlock()
		return nil
	}, nil, nil
}

const accountsSchema = `
CREATE TABLE accounts (user_id TEXT PRIMARY KEY, balance_cents INTEGER NOT NULL);
INSERT INTO accounts VALUES ('u1', 1000);
CREATE TABLE processed_events (event_id TEXT PRIMARY KEY);`

// balanceSplit credits a balance after a check in its own statement.
func balanceSplit(ctx context.Context, db *sql.DB, m handler.Message) error {
	if m.Event.AmountCents <= 0 {
		return handler.Poison(errors.New("bad amount"))
	}
	var n int
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM processed_events WHERE event_id = ?`, m.EventID).Scan(&n); err != nil || n > 0 {
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
	if _, err := tx.ExecContext(ctx, `INSERT OR IGNORE INTO processed_events VALUES (?)`, m.EventID); err != nil {
		return err
	}
	return tx.Commit()
}

func soundnessConsumers() []Consumer {
	ledger := "SELECT event_id, amount_cents FROM ledger"
	return []Consumer{
		adrConsumer(),
		{Name: "splitcheck", Schema: ledgerSchema, Handler: splitCheck, Effects: PerEvent(ledger), Dedupe: "SELECT event_id FROM processed_events"},
		{Name: "autocommit", Schema: ledgerSchema, Handler: autocommit, Effects: PerEvent(ledger), Dedupe: "SELECT event_id FROM processed_events"},
		{Name: "memo", Schema: ledgerSchema, Worker: memo, Effects: PerEvent(ledger)},
		{Name: "balancesplit", Schema: accountsSchema, Handler: balanceSplit, Effects: Aggregate("SELECT user_id, balance_cents FROM accounts"),
			Dedupe: "SELECT event_id FROM processed_events"},
	}
}

// outcomesOf searches every schedule of the bounds (no early stop at a
// counterexample) and returns the set of outcomes.
func outcomesOf(t *testing.T, c Consumer, b Bounds, opts ...Option) (map[string]bool, VerifyResult) {
	t.Helper()
	got := map[string]bool{}
	opts = append(opts, func(cfg *config) {
		cfg.verify.exhaustive = true
		cfg.verify.outcomes = func(s string) { got[s] = true }
	})
	res, err := Explore(c, b, opts...)
	if err != nil {
		t.Fatalf("%s: %v", c.Name, err)
	}
	return got, res
}

func diffSets(a, b map[string]bool) []string {
	var out []string
	for k := range a {
		if !b[k] {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

// TestReductionsLoseNoOutcome compares the reduced search with a brute
// force of the same bounds (every order of every choice, every state
// explored again): the same set of outcomes (effects, dead-letter queue,
// verdicts), for consumers with transactions, autocommit statements on
// different rows, memory in the process, and totals.
func TestReductionsLoseNoOutcome(t *testing.T) {
	bounds := []Bounds{
		{Events: []Fate{FateOK}, Workers: 2, Preemptions: 2, Crashes: 1, Duplicates: 1},
		{Events: []Fate{FateOK, FateOK}, Workers: 2, Preemptions: 1, Failures: 1},
		{Events: []Fate{Transient(1), FatePoison}, Workers: 2, Preemptions: 1, Advances: 1},
	}
	for _, c := range soundnessConsumers() {
		for bi, b := range bounds {
			t.Run(fmt.Sprintf("%s/%d", c.Name, bi), func(t *testing.T) {
				brute, bres := outcomesOf(t, c, b, NoPOR(), NoCache())
				reduced, rres := outcomesOf(t, c, b)
				if lost := diffSets(brute, reduced); len(lost) > 0 {
					t.Errorf("the reduced search lost %d outcome(s) of %d:\n%s", len(lost), len(brute), strings.Join(lost, "\n"))
				}
				if extra := diffSets(reduced, brute); len(extra) > 0 {
					t.Errorf("the reduced search reached %d outcome(s) the brute force did not:\n%s", len(extra), strings.Join(extra, "\n"))
				}
				if len(brute) < 2 {
					t.Errorf("only %d outcome(s): the world is too small to tell", len(brute))
				}
				t.Logf("%d outcomes; brute force %d schedules, reduced %d (%d states, %d sleep-pruned, %d cache-pruned)",
					len(brute), bres.Schedules, rres.Schedules, rres.States, rres.SleepPruned, rres.CachePruned)
			})
		}
	}
	_ = maps.Keys[map[string]bool]
}
