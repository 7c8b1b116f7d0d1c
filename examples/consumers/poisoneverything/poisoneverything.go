// Package poisoneverything is a broken consumer that rejects every message
// as poison: it checks that the message's idempotency key has the format
// "order:<order id>", while the producer keys messages by event id. Every
// message is dead-lettered at once and nothing is ever applied.
package poisoneverything

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
);`

// Handle validates the message, then credits the ledger once per event.
func Handle(ctx context.Context, db *sql.DB, m handler.Message) error {
	if want := "order:" + m.Event.OrderID; m.IdempotencyKey != want {
		return handler.Poison(fmt.Errorf("malformed idempotency key %q, want %q", m.IdempotencyKey, want))
	}
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
