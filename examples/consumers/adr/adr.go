// Package adr is a consumer written the way the "idempotent consumer" ADR
// describes it: inside one database transaction, look up the event in
// processed_events, apply the effect (a ledger row), insert the processed
// row, commit. It is correct: the harness never flags it.
package adr

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
	event_id     TEXT PRIMARY KEY,
	processed_at BIGINT  NOT NULL
);`

// Handle credits the ledger once per event.
func Handle(ctx context.Context, db *sql.DB, m handler.Message) error {
	if m.Event.AmountCents <= 0 {
		return handler.Poison(fmt.Errorf("order %s: amount %d", m.Event.OrderID, m.Event.AmountCents))
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()

	var seen int
	err = tx.QueryRowContext(ctx, `SELECT 1 FROM processed_events WHERE event_id = $1`, m.EventID).Scan(&seen)
	switch {
	case err == nil:
		return nil // a duplicate: already applied
	case !errors.Is(err, sql.ErrNoRows):
		return err
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO ledger (event_id, user_id, amount_cents) VALUES ($1, $2, $3)`,
		m.EventID, m.Event.UserID, m.Event.AmountCents); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO processed_events (event_id, processed_at) VALUES ($1, $2)`,
		m.EventID, m.Event.OccurredAtMs); err != nil {
		return err
	}
	return tx.Commit()
}
