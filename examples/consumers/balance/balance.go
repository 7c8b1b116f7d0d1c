// Package balance is a correct consumer that keeps state rather than
// entries: it runs balance = balance + amount, guarded by the
// processed_events row inserted in the same transaction.
package balance

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/idemcheck/idemcheck/impl/contract/handler"
)

// Schema is the consumer's tables, with two accounts.
const Schema = `
CREATE TABLE accounts (
	user_id       TEXT PRIMARY KEY,
	balance_cents INTEGER NOT NULL
);
INSERT INTO accounts VALUES ('u1', 5000), ('u2', 0);
CREATE TABLE processed_events (
	event_id TEXT PRIMARY KEY
);`

// Handle credits the user's balance once per event.
func Handle(ctx context.Context, db *sql.DB, m handler.Message) error {
	if m.Event.AmountCents <= 0 {
		return handler.Poison(fmt.Errorf("order %s: amount %d", m.Event.OrderID, m.Event.AmountCents))
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	var id string
	err = tx.QueryRowContext(ctx, `SELECT event_id FROM processed_events WHERE event_id = $1`, m.EventID).Scan(&id)
	switch {
	case err == nil:
		return nil
	case !errors.Is(err, sql.ErrNoRows):
		return err
	}
	if _, err := tx.ExecContext(ctx, `UPDATE accounts SET balance_cents = balance_cents + $1 WHERE user_id = $2`,
		m.Event.AmountCents, m.Event.UserID); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO processed_events (event_id) VALUES ($1)`, m.EventID); err != nil {
		return err
	}
	return tx.Commit()
}
