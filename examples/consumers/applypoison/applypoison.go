// Package applypoison is a broken consumer that credits poison events: it
// is the ADR pattern (check, effect and mark in one transaction) without
// the validation of the amount, so an order paid for zero cents or less is
// written to the ledger and acked instead of dead-lettered.
package applypoison

import (
	"context"
	"database/sql"
	"errors"

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

// Handle credits the ledger once per event, whatever the amount.
func Handle(ctx context.Context, db *sql.DB, m handler.Message) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	var seen int
	err = tx.QueryRowContext(ctx, `SELECT 1 FROM processed_events WHERE event_id = $1`, m.EventID).Scan(&seen)
	switch {
	case err == nil:
		return nil // a duplicate
	case !errors.Is(err, sql.ErrNoRows):
		return err
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
