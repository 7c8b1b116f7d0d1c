// Package claimstuck is a broken consumer: it claims the event in a claims
// table (its own transaction), bumps the claim's attempts and nacks when the
// effect fails, but never releases the claim. The redelivery finds the
// claim "processing", takes it for another worker's, and acks: the event is
// stuck forever, never applied.
package claimstuck

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
CREATE TABLE claims (
	event_id TEXT PRIMARY KEY,
	status   TEXT    NOT NULL,
	attempts INTEGER NOT NULL
);`

// Handle claims, applies, and marks the claim done.
func Handle(ctx context.Context, db *sql.DB, m handler.Message) error {
	if m.Event.AmountCents <= 0 {
		return handler.Poison(fmt.Errorf("order %s: amount %d", m.Event.OrderID, m.Event.AmountCents))
	}
	res, err := db.ExecContext(ctx, `INSERT INTO claims (event_id, status, attempts) VALUES ($1, 'processing', 1) ON CONFLICT DO NOTHING`, m.EventID)
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		return err // done, or another worker is processing it
	}
	if err := apply(ctx, db, m); err != nil {
		// Count the failure and let the broker retry; the claim stays ours.
		_, _ = db.ExecContext(ctx, `UPDATE claims SET attempts = attempts + 1 WHERE event_id = $1`, m.EventID)
		return err
	}
	return nil
}

func apply(ctx context.Context, db *sql.DB, m handler.Message) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `INSERT INTO ledger (event_id, user_id, amount_cents) VALUES ($1, $2, $3)`,
		m.EventID, m.Event.UserID, m.Event.AmountCents); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `UPDATE claims SET status = 'done' WHERE event_id = $1`, m.EventID); err != nil {
		return err
	}
	return tx.Commit()
}
