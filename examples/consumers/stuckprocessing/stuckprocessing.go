// Package stuckprocessing is a broken consumer in the shape most teams
// write a claim in: it inserts a 'processing' row for the event (its own
// statement, committed at once), applies the effect and flips the row to
// 'done' in one transaction, and answers a redelivery that finds the row
// still 'processing' with a transient "locked" error, taking it for another
// worker's. When the effect fails once (a lost connection, a crash), the
// row stays 'processing' for good: every redelivery answers "locked" until
// max_attempts, and the event is dead-lettered although one retry would
// have applied it.
//
// claimstuck is its neighbour: it acks such a redelivery and loses the
// event outright (nothing-lost); this one nacks it into the DLQ, which
// accounts for the event, so only healthy-applied catches it.
package stuckprocessing

import (
	"context"
	"database/sql"
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
	event_id TEXT PRIMARY KEY,
	status   TEXT NOT NULL
);`

// Dedupe reads the events marked done.
const Dedupe = "SELECT event_id FROM processed_events WHERE status = 'done'"

// Handle claims the event, then applies it and marks it done.
func Handle(ctx context.Context, db *sql.DB, m handler.Message) error {
	if m.Event.AmountCents <= 0 {
		return handler.Poison(fmt.Errorf("order %s: amount %d", m.Event.OrderID, m.Event.AmountCents))
	}
	res, err := db.ExecContext(ctx, `INSERT INTO processed_events (event_id, status) VALUES ($1, 'processing') ON CONFLICT (event_id) DO NOTHING`, m.EventID)
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil {
		return err
	} else if n == 0 {
		var status string
		if err := db.QueryRowContext(ctx, `SELECT status FROM processed_events WHERE event_id = $1`, m.EventID).Scan(&status); err != nil {
			return err
		}
		if status == "done" {
			return nil // a duplicate
		}
		return fmt.Errorf("event %s is locked: another worker is processing it", m.EventID) // retry later
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err // the claim stays 'processing'
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `INSERT INTO ledger (event_id, user_id, amount_cents) VALUES ($1, $2, $3)`,
		m.EventID, m.Event.UserID, m.Event.AmountCents); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `UPDATE processed_events SET status = 'done' WHERE event_id = $1`, m.EventID); err != nil {
		return err
	}
	return tx.Commit()
}
