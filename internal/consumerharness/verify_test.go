package consumerharness

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/idemcheck/idemcheck/impl/contract/handler"
	"github.com/idemcheck/idemcheck/internal/search"
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
func memo(string, *sql.DB) (handler.Func, io.Closer, error) {
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

// byName is a Worker whose handler depends on the name its factory was
// given: w1's credits the amount, any other worker's twice the amount.
// Both make the same first call, so that states where one or the other
// holds the delivery look alike but for the workers' names: its workers
// are not interchangeable.
func byName(id string, _ *sql.DB) (handler.Func, io.Closer, error) {
	factor := int64(2)
	if strings.HasPrefix(id, "w1#") {
		factor = 1
	}
	return func(ctx context.Context, db *sql.DB, m handler.Message) error {
		if m.Event.AmountCents <= 0 {
			return handler.Poison(errors.New("bad amount"))
		}
		var n int
		if err := db.QueryRowContext(ctx, `SELECT count(*) FROM processed_events WHERE event_id = ?`, m.EventID).Scan(&n); err != nil || n > 0 {
			return err
		}
		_, err := db.ExecContext(ctx, `INSERT INTO ledger VALUES (?, ?)`, m.EventID, factor*m.Event.AmountCents)
		return err
	}, nil, nil
}

const verifyAccountsSchema = `
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

// upgrade checks in a read-only (DEFERRED) transaction and writes in it:
// two workers that both read deadlock when they both write (each waits
// for the other's shared lock), and one of them gives up.
func upgrade(ctx context.Context, db *sql.DB, m handler.Message) error {
	if m.Event.AmountCents <= 0 {
		return handler.Poison(errors.New("bad amount"))
	}
	tx, err := db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return err
	}
	defer tx.Rollback()
	var n int
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM processed_events WHERE event_id = ?`, m.EventID).Scan(&n); err != nil || n > 0 {
		return err
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO processed_events VALUES (?)`, m.EventID); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO ledger VALUES (?, ?)`, m.EventID, m.Event.AmountCents); err != nil {
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
		{Name: "byname", Schema: ledgerSchema, Worker: byName, Effects: PerEvent(ledger)},
		{Name: "upgrade", Schema: ledgerSchema, Handler: upgrade, Effects: PerEvent(ledger), Dedupe: "SELECT event_id FROM processed_events"},
		{Name: "balancesplit", Schema: verifyAccountsSchema, Handler: balanceSplit, Effects: Aggregate("SELECT user_id, balance_cents FROM accounts"),
			Dedupe: "SELECT event_id FROM processed_events"},
	}
}

// outcomesOf searches every schedule of the bounds (no early stop at a
// counterexample) and returns the set of outcomes.
func outcomesOf(t *testing.T, c Consumer, b Bounds, opts ...Option) (map[string]bool, VerifyResult) {
	t.Helper()
	got, res, err := searchOutcomes(c, b, opts...)
	if err != nil {
		t.Fatalf("%s: %v", c.Name, err)
	}
	return got, res
}

// searchOutcomes is outcomesOf, its error returned.
func searchOutcomes(c Consumer, b Bounds, opts ...Option) (map[string]bool, VerifyResult, error) {
	got := map[string]bool{}
	var mu sync.Mutex
	opts = append(opts, func(cfg *config) {
		cfg.verify.exhaustive = true
		cfg.verify.outcomes = func(s string) {
			mu.Lock()
			got["outcome "+s] = true
			mu.Unlock()
		}
		cfg.verify.states = func(k search.Key) {
			mu.Lock()
			got[fmt.Sprintf("state %x", k)] = true
			mu.Unlock()
		}
	})
	res, err := Explore(c, b, opts...)
	return got, res, err
}

// bruteForces holds the brute force of each soundness world, searched
// once: three tests compare with the same ones, and the brute force is
// most of their time. The sets are only read once made.
var bruteForces struct {
	sync.Mutex
	of map[int]*bruteForce
}

type bruteForce struct {
	once sync.Once
	set  map[string]bool
	res  VerifyResult
	err  error
}

// bruteOf is the brute force of soundnessWorlds()[i] (every order of
// every choice, every state explored again), searched by the first test
// that asks for it.
func bruteOf(t *testing.T, i int) (map[string]bool, VerifyResult) {
	t.Helper()
	w := soundnessWorlds()[i]
	bruteForces.Lock()
	if bruteForces.of == nil {
		bruteForces.of = map[int]*bruteForce{}
	}
	bf := bruteForces.of[i]
	if bf == nil {
		bf = &bruteForce{}
		bruteForces.of[i] = bf
	}
	bruteForces.Unlock()
	bf.once.Do(func() {
		bf.set, bf.res, bf.err = searchOutcomes(w.c, w.b, append(slices.Clone(w.opts), NoPOR(), NoCache())...)
	})
	if bf.err != nil {
		t.Fatalf("%s: %v", w, bf.err)
	}
	return bf.set, bf.res
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
// explored again): the same states met and the same outcomes (effects,
// dead-letter queue, verdicts), for consumers with transactions,
// autocommit statements on different rows, a deadlock, memory in the
// process, totals, and events with every fate.
func TestReductionsLoseNoOutcome(t *testing.T) {
	t.Parallel() // a long search: it runs beside the package's other long tests
	for i, w := range soundnessWorlds() {
		t.Run(w.c.Name, func(t *testing.T) {
			brute, bres := bruteOf(t, i)
			reduced, rres := outcomesOf(t, w.c, w.b, w.opts...)
			if lost := diffSets(brute, reduced); len(lost) > 0 {
				t.Errorf("%s: the reduced search lost %d of %d states and outcomes:\n%s", w, len(lost), len(brute), strings.Join(lost, "\n"))
			}
			if extra := diffSets(reduced, brute); len(extra) > 0 {
				t.Errorf("%s: the reduced search met %d states or outcomes the brute force did not:\n%s", w, len(extra), strings.Join(extra, "\n"))
			}
			if rres.Schedules >= bres.Schedules {
				t.Errorf("%s: the reductions saved nothing (%d schedules, brute force %d)", w, rres.Schedules, bres.Schedules)
			}
			t.Logf("%s: %d states and outcomes; brute force %d schedules, reduced %d (%d sleep-pruned, %d cache-pruned)",
				w, len(brute), bres.Schedules, rres.Schedules, rres.SleepPruned, rres.CachePruned)
		})
	}
}

// soundnessWorld is a consumer and bounds the soundness tests search.
type soundnessWorld struct {
	c    Consumer
	b    Bounds
	opts []Option
}

func (w soundnessWorld) String() string { return fmt.Sprintf("%s %s", w.c.Name, w.b) }

// TestTheSoundnessTestCatchesBrokenReductions breaks each reduction on
// purpose (footprints that ignore SQLite's lock or the tables, a sleep
// set without the preemption cost check, names of states that leave out
// the database, a worker's history or the broker, workers of a Worker
// factory folded together though it knows their names): the comparison
// with the brute force must tell, on one of its worlds at least.
//
// Folding a Worker consumer's workers names its states differently from
// the brute force even where the fold is right, so for that mutant only
// the outcomes count: it must lose an outcome.
func TestTheSoundnessTestCatchesBrokenReductions(t *testing.T) {
	t.Parallel() // a long search: it runs beside the package's other long tests
	ws := soundnessWorlds()
	for _, m := range reductionMutants {
		t.Run(m, func(t *testing.T) {
			for _, i := range mutantWorlds {
				w := ws[i]
				brute, _ := bruteOf(t, i)
				got, _ := outcomesOf(t, w.c, w.b, append(slices.Clone(w.opts), func(c *config) { c.verify.mutant = m })...)
				lost := diffSets(brute, got)
				if m == "symmetry-ignores-identity" {
					lost = slices.DeleteFunc(lost, func(k string) bool { return !strings.HasPrefix(k, "outcome ") })
				}
				if len(lost) > 0 {
					t.Logf("caught on %s: %d outcome(s) lost", w, len(lost))
					return
				}
			}
			t.Errorf("mutant %s: no world tells it from the sound reductions", m)
		})
	}
}

// soundnessWorlds are small enough for a brute force of a few seconds.
func soundnessWorlds() []soundnessWorld {
	cs := map[string]Consumer{}
	for _, c := range soundnessConsumers() {
		cs[c.Name] = c
	}
	one, two := []Fate{FateOK}, []Fate{FateOK, FateOK}
	return []soundnessWorld{
		{cs["splitcheck"], Bounds{Events: one, Workers: 2, Preemptions: 1, Crashes: 1, Duplicates: 1}, nil},
		{cs["adr"], Bounds{Events: two, Workers: 2, Preemptions: 1, Failures: 1}, nil},
		{cs["adr"], Bounds{Events: []Fate{Transient(1), FatePoison}, Workers: 2, Preemptions: 1, Failures: 1, Advances: 1}, nil},
		{cs["autocommit"], Bounds{Events: two, Workers: 2, Preemptions: 2}, nil},
		{cs["autocommit"], Bounds{Events: one, Workers: 2, Preemptions: 1, Replays: 1}, nil},
		{cs["memo"], Bounds{Events: one, Workers: 2, Preemptions: 2, Crashes: 1, Duplicates: 1}, nil},
		{cs["balancesplit"], Bounds{Events: one, Workers: 2, Preemptions: 2, Duplicates: 1}, nil},
		{cs["upgrade"], Bounds{Events: one, Workers: 2, Preemptions: 2, Duplicates: 1}, nil},
		{cs["adr"], Bounds{Events: one, Workers: 2, Preemptions: 1, Advances: 1}, []Option{SQLite("_txlock=immediate")}},
		{cs["byname"], Bounds{Events: one, Workers: 2, Preemptions: 1, Duplicates: 1}, nil},
		{cs["adr"], Bounds{Events: one, Workers: 2, Preemptions: 1, Crashes: 1, Duplicates: 1}, nil},
		{cs["splitcheck"], Bounds{Events: one, Workers: 3, Preemptions: 1, Duplicates: 1}, nil},
	}
}

// mutantWorlds are the worlds the broken reductions are tried on, in
// order (their places in soundnessWorlds).
var mutantWorlds = []int{3, 5, 6, 7, 8, 9, 10, 11}

// TestParallelSearchLosesNothing: walkers that share the state cache and
// hand subtrees to each other meet the same states and outcomes as the
// brute force.
func TestParallelSearchLosesNothing(t *testing.T) {
	ws := soundnessWorlds()
	for _, i := range []int{3, 5, 7} {
		w := ws[i]
		t.Run(w.c.Name, func(t *testing.T) {
			brute, _ := bruteOf(t, i)
			par, res := outcomesOf(t, w.c, w.b, append(slices.Clone(w.opts), VerifyParallel(3))...)
			if lost := diffSets(brute, par); len(lost) > 0 {
				t.Errorf("%s: 3 walkers lost %d of %d states and outcomes:\n%s", w, len(lost), len(brute), strings.Join(lost, "\n"))
			}
			if extra := diffSets(par, brute); len(extra) > 0 {
				t.Errorf("%s: 3 walkers met %d states or outcomes the brute force did not", w, len(extra))
			}
			t.Logf("%s: %d schedules on 3 walkers", w, res.Schedules)
		})
	}
}

// TestCrashesLeftOutCountAsReached: a crash the search leaves out, since
// the crash before its worker's last call leaves the same state, still
// counts its situation as reached; with one worker no other move stands
// between a call and the crash after it, so every crash inside the
// transaction is left out, and a coverage that said so would claim the
// consumer untested there.
func TestCrashesLeftOutCountAsReached(t *testing.T) {
	b := Bounds{Events: []Fate{FateOK}, Workers: 1, Crashes: 1}
	reduced, err := Explore(adrConsumer(), b)
	if err != nil {
		t.Fatal(err)
	}
	brute, err := Explore(adrConsumer(), b, NoPOR())
	if err != nil {
		t.Fatal(err)
	}
	if reduced.Schedules >= brute.Schedules {
		t.Fatalf("no crash was left out: %d schedules, %d without the partial-order reduction", reduced.Schedules, brute.Schedules)
	}
	for k, n := range brute.Coverage {
		if n > 0 && reduced.Coverage[k] == 0 {
			t.Errorf("situation %s: reached %d time(s) without the reduction, never with it", k, n)
		}
	}
	for _, k := range []string{"crash-at-exec", "crash-at-query", "crash-at-commit"} {
		if reduced.Coverage[k] == 0 {
			t.Errorf("situation %s never reached: %v", k, reduced.Coverage)
		}
	}
}
