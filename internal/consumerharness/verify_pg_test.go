package consumerharness

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"testing"

	"github.com/idemcheck/idemcheck/impl/contract/handler"
)

// pgSplitBalance credits the balance after checking the processed row in
// a statement of its own: two workers with a duplicate both pass the
// check. Its tables are PostgreSQL's: the partial-order reduction reads
// them (there is no database lock to order everything).
func pgSplitBalance(ctx context.Context, db *sql.DB, m handler.Message) error {
	if m.Event.AmountCents <= 0 {
		return handler.Poison(errors.New("bad amount"))
	}
	var n int
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM processed_events WHERE event_id = $1`, m.EventID).Scan(&n); err != nil || n > 0 {
		return err
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `UPDATE accounts SET balance_cents = balance_cents + $1 WHERE user_id = $2`, m.Event.AmountCents, m.Event.UserID); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO processed_events (event_id) VALUES ($1) ON CONFLICT DO NOTHING`, m.EventID); err != nil {
		return err
	}
	return tx.Commit()
}

// TestVerifyOnPostgres: a correct consumer is verified and a broken one
// found on PostgreSQL, and the reduced search of a small world meets the
// states and outcomes a brute force meets there too.
func TestVerifyOnPostgres(t *testing.T) {
	t.Parallel() // a long search: it runs beside the package's other long tests
	dsn := pgDSN(t)
	b := Bounds{Events: []Fate{FateOK}, Workers: 2, Preemptions: 1, Duplicates: 1}
	res, err := Explore(pgBalanceConsumer(), b, Postgres(dsn), VerifyParallel(2))
	if err != nil || !res.Verified || res.Backend != "postgres" {
		t.Fatalf("%v\n%s", err, res.Report())
	}
	split := Consumer{Name: "pg-split", Schema: pgAccountsSchema, Handler: pgSplitBalance,
		Effects: Aggregate("SELECT user_id, balance_cents FROM accounts"), Dedupe: "SELECT event_id FROM processed_events"}
	res, err = Explore(split, b, Postgres(dsn))
	if err != nil || !res.Failed || res.Law != LawSingleCredit {
		t.Fatalf("%v\n%s", err, res.Report())
	}
	small := Bounds{Events: []Fate{FateOK}, Workers: 2, Preemptions: 2, Duplicates: 1}
	brute, _ := outcomesOf(t, split, small, Postgres(dsn), NoPOR(), NoCache())
	reduced, rres := outcomesOf(t, split, small, Postgres(dsn))
	if lost := diffSets(brute, reduced); len(lost) > 0 {
		t.Errorf("on PostgreSQL the reduced search lost %d of %d states and outcomes", len(lost), len(brute))
	}
	if rres.SleepPruned == 0 {
		t.Errorf("no choice slept on PostgreSQL: %+v", rres)
	}
}

// TestVerifyOnPostgresWithPgx: a consumer written against pgx is verified
// as a database/sql one is, its workers' transactions side by side and
// their lock waits decided by the search; the reduced search of a small
// world meets the states and outcomes a brute force meets there too.
func TestVerifyOnPostgresWithPgx(t *testing.T) {
	t.Parallel() // a long search: it runs beside the package's other long tests
	dsn := pgDSN(t)
	b := Bounds{Events: []Fate{FateOK}, Workers: 2, Preemptions: 1, Duplicates: 1, Crashes: 1}
	res, err := Explore(pgxBalanceConsumer(), b, Postgres(dsn))
	if err != nil || !res.Verified || res.Backend != "postgres" {
		t.Fatalf("%v\n%s", err, res.Report())
	}
	small := Bounds{Events: []Fate{FateOK, FateOK}, Workers: 2, Preemptions: 1, Crashes: 1}
	brute, bres := outcomesOf(t, pgxBalanceConsumer(), small, Postgres(dsn), NoPOR(), NoCache())
	reduced, rres := outcomesOf(t, pgxBalanceConsumer(), small, Postgres(dsn))
	if lost := diffSets(brute, reduced); len(lost) > 0 {
		t.Errorf("with pgx the reduced search lost %d of %d states and outcomes:\n%s", len(lost), len(brute), strings.Join(lost, "\n"))
	}
	if rres.Schedules >= bres.Schedules {
		t.Errorf("with pgx the reductions saved nothing (%d schedules, brute force %d)", rres.Schedules, bres.Schedules)
	}
	t.Logf("verified: %d schedules, %d states in %s; small world: brute force %d schedules, reduced %d, %d states and outcomes",
		res.Schedules, res.States, res.Elapsed, bres.Schedules, rres.Schedules, len(brute))
}

// pgCheckInTx looks for the mark inside its transaction, then credits and
// marks (ON CONFLICT DO NOTHING); processed_events' seq is a BIGSERIAL.
func pgCheckInTx(ctx context.Context, db *sql.DB, m handler.Message) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	var seen int
	err = tx.QueryRowContext(ctx, `SELECT 1 FROM processed_events WHERE event_id = $1`, m.EventID).Scan(&seen)
	switch {
	case err == nil:
		return tx.Commit()
	case !errors.Is(err, sql.ErrNoRows):
		return err
	}
	if _, err := tx.ExecContext(ctx, `UPDATE accounts SET balance_cents = balance_cents + $1 WHERE user_id = $2`, m.Event.AmountCents, m.Event.UserID); err != nil {
		return err
	}
	if _, err = tx.ExecContext(ctx, `INSERT INTO processed_events (event_id) VALUES ($1) ON CONFLICT DO NOTHING`, m.EventID); err != nil {
		return err
	}
	return tx.Commit()
}

// TestPostgresSequencesNameTheState: an INSERT that a crash rolls back
// has moved processed_events' sequence all the same, so the state after
// it is not the state after a crash before the INSERT (the next mark
// gets another seq). The state caching alone must meet every state and
// outcome the brute force meets in a world with a crash, and one worker
// is enough for the crash and its redelivery. The check can fail: names
// that leave the sequence out lose the states after that redelivery.
func TestPostgresSequencesNameTheState(t *testing.T) {
	dsn := pgDSN(t)
	c := Consumer{Name: "pg-checkintx", Schema: pgAccountsSchema, Handler: pgCheckInTx,
		Effects: Aggregate("SELECT user_id, balance_cents FROM accounts"), Dedupe: "SELECT event_id FROM processed_events"}
	b := Bounds{Events: []Fate{FateOK}, Workers: 1, Crashes: 1}
	cachingLosesNothing(t, c, b, Postgres(dsn))

	mutant := func(cfg *config) { cfg.verify.mutant = "key-ignores-sequences" }
	brute, _ := outcomesOf(t, c, b, Postgres(dsn), NoPOR(), NoCache(), mutant)
	cached, _ := outcomesOf(t, c, b, Postgres(dsn), NoPOR(), mutant)
	if lost := diffSets(brute, cached); len(lost) == 0 {
		t.Errorf("names without the sequence lost nothing either (%d states and outcomes): the world does not tell", len(brute))
	}
}

// pgSeenFirstUse dedupes through a table it makes on first use (not in
// the schema): the mark goes first, outside any transaction, and the
// credit only when the mark was new.
func pgSeenFirstUse(ctx context.Context, db *sql.DB, m handler.Message) error {
	if _, err := db.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS seen (event_id TEXT PRIMARY KEY)`); err != nil {
		return err
	}
	res, err := db.ExecContext(ctx, `INSERT INTO seen VALUES ($1) ON CONFLICT DO NOTHING`, m.EventID)
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		return err
	}
	_, err = db.ExecContext(ctx, `UPDATE accounts SET balance_cents = balance_cents + $1 WHERE user_id = $2`, m.Event.AmountCents, m.Event.UserID)
	return err
}

// TestPostgresNamesTheTablesAScenarioMade: a state's name on PostgreSQL
// is read in one statement while the catalog is the schema's, and table
// by table once a scenario made a table of its own; either way the rows
// of the made table are in it, so that the state caching meets every
// state and outcome the brute force meets.
func TestPostgresNamesTheTablesAScenarioMade(t *testing.T) {
	dsn := pgDSN(t)
	c := Consumer{Name: "pg-seen", Schema: pgAccountsSchema, Handler: pgSeenFirstUse,
		Effects: Aggregate("SELECT user_id, balance_cents FROM accounts")}
	b := Bounds{Events: []Fate{FateOK}, Workers: 2, Crashes: 1}
	cachingLosesNothing(t, c, b, Postgres(dsn))
}

// cachingLosesNothing checks that the state caching alone (no partial
// order) meets every state and outcome of b that the brute force meets,
// and that it met some state again.
func cachingLosesNothing(t *testing.T, c Consumer, b Bounds, db Option) {
	t.Helper()
	brute, bres := outcomesOf(t, c, b, db, NoPOR(), NoCache())
	cached, cres := outcomesOf(t, c, b, db, NoPOR())
	if lost := diffSets(brute, cached); len(lost) > 0 {
		t.Errorf("the state caching lost %d of %d states and outcomes:\n%s", len(lost), len(brute), strings.Join(lost, "\n"))
	}
	if cres.CachePruned == 0 {
		t.Errorf("no state was met again: %+v", cres)
	}
	t.Logf("brute force %d schedules, cached %d (%d cache-pruned), %d states and outcomes", bres.Schedules, cres.Schedules, cres.CachePruned, len(brute))
}
