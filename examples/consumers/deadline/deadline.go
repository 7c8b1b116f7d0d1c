// Package deadline is the ADR consumer with the request deadline a service
// puts around its database work, in four versions.
//
// Handle bounds the transaction with context.WithTimeout(ctx, Timeout) and
// defer cancel(): check processed_events, insert the ledger row, mark,
// commit, all under the one deadline. When the deadline expires in a stall,
// the call in flight returns context.DeadlineExceeded, database/sql rolls
// the transaction back, and the handler nacks: nothing half-done remains,
// and the redelivery starts over. The harness never flags it.
//
// HandleCancel does the same under context.WithCancel, and cancels the
// context once the transaction is committed (or given up). The harness
// never flags it.
//
// HandleCancelRollback is HandleCancel without the deferred Rollback: on
// an error it cancels the context, and the cancellation is what rolls the
// transaction back, as database/sql documents ("If the context is
// canceled, the sql package will roll back the transaction"). It is
// correct, but the harness flags it today (law runs): see its test.
//
// HandleSplit is broken: under a SplitTimeout deadline it credits the
// ledger in one transaction and marks the event in a second call. When the
// deadline expires between the two (a stall: a slow disk, a GC pause, a
// lock queue), the mark fails with the expired context, the handler nacks,
// and the redelivery finds no mark and credits again. The harness catches
// it as single-credit: time moves past the deadline while the worker is at
// its commit, and the handler nacks with "context deadline exceeded".
package deadline

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

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
);`

// Timeout bounds the database work of one delivery.
const Timeout = 30 * time.Second

// SplitTimeout is HandleSplit's deadline: shorter, because it is written
// for the p99 of a healthy database, not for a stall.
const SplitTimeout = 10 * time.Second

// Handle credits the ledger once per event, in one transaction under a
// deadline.
func Handle(ctx context.Context, db *sql.DB, m handler.Message) error {
	if err := validate(m); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, Timeout)
	defer cancel()
	return credit(ctx, db, m)
}

// HandleCancel is Handle under a context it cancels itself once the
// transaction is over.
func HandleCancel(ctx context.Context, db *sql.DB, m handler.Message) error {
	if err := validate(m); err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	err := credit(ctx, db, m)
	// The transaction is committed or rolled back: nothing of this
	// delivery's work may go on under ctx.
	cancel()
	return err
}

// credit is Handle's transaction, under the caller's context.
func credit(ctx context.Context, db *sql.DB, m handler.Message) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	applied, err := apply(ctx, tx, m)
	if err != nil || !applied {
		return err
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO processed_events (event_id) VALUES ($1)`, m.EventID); err != nil {
		return err
	}
	return tx.Commit()
}

// HandleCancelRollback is HandleCancel with no Rollback: on an error,
// cancelling the context rolls the transaction back.
func HandleCancelRollback(ctx context.Context, db *sql.DB, m handler.Message) error {
	if err := validate(m); err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		cancel()
		return err
	}
	applied, err := apply(ctx, tx, m)
	if err == nil && applied {
		_, err = tx.ExecContext(ctx, `INSERT INTO processed_events (event_id) VALUES ($1)`, m.EventID)
	}
	if err == nil {
		err = tx.Commit()
	}
	// Committed, or ended by the cancellation: either way nothing of
	// this delivery's work outlives the call.
	cancel()
	return err
}

// HandleSplit credits, then marks, under one deadline but in two calls:
// the check and the credit in a transaction, the mark after its commit.
func HandleSplit(ctx context.Context, db *sql.DB, m handler.Message) error {
	if err := validate(m); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, SplitTimeout)
	defer cancel()

	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	applied, err := apply(ctx, tx, m)
	if err != nil || !applied {
		return err
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	// The bug: the mark is a call of its own, under a deadline that may
	// have run out since the credit committed.
	_, err = db.ExecContext(ctx, `INSERT INTO processed_events (event_id) VALUES ($1)`, m.EventID)
	return err
}

// validate dead-letters what can never be credited.
func validate(m handler.Message) error {
	if m.Event.AmountCents <= 0 {
		return handler.Poison(fmt.Errorf("order %s: amount %d", m.Event.OrderID, m.Event.AmountCents))
	}
	return nil
}

// apply credits the ledger unless the event is marked processed; it
// reports whether it credited.
func apply(ctx context.Context, tx *sql.Tx, m handler.Message) (bool, error) {
	var seen int
	err := tx.QueryRowContext(ctx, `SELECT 1 FROM processed_events WHERE event_id = $1`, m.EventID).Scan(&seen)
	switch {
	case err == nil:
		return false, nil // a duplicate: already applied
	case !errors.Is(err, sql.ErrNoRows):
		return false, err
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO ledger (event_id, user_id, amount_cents) VALUES ($1, $2, $3)`,
		m.EventID, m.Event.UserID, m.Event.AmountCents); err != nil {
		return false, err
	}
	return true, nil
}
