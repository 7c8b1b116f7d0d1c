// Package ownretry is a consumer that keeps its own retry count and its
// own dead-letter table, as teams do on a broker whose dead-letter queue
// they cannot read or replay: a delivery that fails is counted in
// delivery_failures (outside the failed transaction) and nacked; once an
// event has failed MaxFailures times, it is written to dead_letters and
// acked, and so is a message that can never succeed (the broker's DLQ is
// never used). Redeliveries of a dead-lettered event are acked untouched,
// left for an operator.
//
// Handle (MaxFailures = 3) is correct: given to the harness with
// Consumer.DeadLetters, it is never flagged; a healthy event reaches
// dead_letters only after three deliveries the harness's own faults
// failed. HandleNoRetry (one failure, as a team that sends every failure
// to an operator configures it) is broken: a single transient failure
// (a lost connection, a lock timeout) parks a healthy event for good,
// where the broker would have retried it (four attempts, Check's policy),
// and the harness catches it as healthy-applied.
package ownretry

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/idemcheck/idemcheck/impl/contract/handler"
)

// Schema is the consumer's tables.
const Schema = `
CREATE TABLE ledger (
	event_id     TEXT    NOT NULL,
	user_id      TEXT    NOT NULL,
	amount_cents INTEGER NOT NULL
);
CREATE TABLE processed_events (
	event_id TEXT PRIMARY KEY
);
CREATE TABLE delivery_failures (
	event_id   TEXT PRIMARY KEY,
	failures   INTEGER NOT NULL,
	last_error TEXT    NOT NULL
);
CREATE TABLE dead_letters (
	event_id TEXT PRIMARY KEY,
	reason   TEXT    NOT NULL,
	failures INTEGER NOT NULL
);`

// MaxFailures is how often Handle lets an event fail before it
// dead-letters it.
const MaxFailures = 3

// Handle credits the ledger once per event, dead-lettering an event after
// MaxFailures failures.
var Handle = Handler(MaxFailures)

// HandleNoRetry dead-letters an event at its first failure.
var HandleNoRetry = Handler(1)

// errPermanent marks a message that can never succeed.
var errPermanent = errors.New("permanent")

// Handler returns the handler that dead-letters an event once it failed
// maxFailures times.
func Handler(maxFailures int) handler.Func {
	return func(ctx context.Context, db *sql.DB, m handler.Message) error {
		err := credit(ctx, db, m)
		switch {
		case err == nil:
			return nil
		case errors.Is(err, errPermanent):
			return deadLetter(ctx, db, m.EventID, err.Error(), 0, err)
		}
		failures, ferr := countFailure(ctx, db, m.EventID, err)
		if ferr != nil || failures < maxFailures {
			return err // nacked: the broker redelivers
		}
		return deadLetter(ctx, db, m.EventID, err.Error(), failures, err)
	}
}

// credit applies the event unless it was applied or dead-lettered.
func credit(ctx context.Context, db *sql.DB, m handler.Message) error {
	if m.Event.AmountCents <= 0 {
		return fmt.Errorf("%w: order %s: amount %d", errPermanent, m.Event.OrderID, m.Event.AmountCents)
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	var done int
	err = tx.QueryRowContext(ctx, `SELECT count(*) FROM processed_events WHERE event_id = $1`, m.EventID).Scan(&done)
	if err != nil {
		return err
	}
	var parked int
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM dead_letters WHERE event_id = $1`, m.EventID).Scan(&parked); err != nil {
		return err
	}
	if done > 0 || parked > 0 {
		return nil // applied, or left for an operator
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO ledger (event_id, user_id, amount_cents) VALUES ($1, $2, $3)`,
		m.EventID, m.Event.UserID, m.Event.AmountCents); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO processed_events (event_id) VALUES ($1)`, m.EventID); err != nil {
		return err
	}
	return tx.Commit()
}

// countFailure records a failed delivery of id and returns its failures
// so far.
func countFailure(ctx context.Context, db *sql.DB, id string, cause error) (int, error) {
	var n int
	err := db.QueryRowContext(ctx, `INSERT INTO delivery_failures (event_id, failures, last_error) VALUES ($1, 1, $2)
ON CONFLICT (event_id) DO UPDATE SET failures = delivery_failures.failures + 1, last_error = excluded.last_error
RETURNING failures`, id, cause.Error()).Scan(&n)
	return n, err
}

// deadLetter parks id in dead_letters and acks it; if that fails, the
// delivery is nacked with cause, to be tried again.
func deadLetter(ctx context.Context, db *sql.DB, id, reason string, failures int, cause error) error {
	if _, err := db.ExecContext(ctx, `INSERT INTO dead_letters (event_id, reason, failures) VALUES ($1, $2, $3) ON CONFLICT (event_id) DO NOTHING`,
		id, reason, failures); err != nil {
		return cause
	}
	return nil
}
