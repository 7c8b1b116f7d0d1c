// Package balancesplit is a broken consumer: a balance update whose
// processed-row check runs in its own transaction, before the transaction
// that updates the balance and inserts the row. Two workers both pass the
// check, and the balance is credited twice.
package balancesplit

import (
	"context"
	"database/sql"
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

// Handle checks in one transaction and credits in another.
func Handle(ctx context.Context, db *sql.DB, m handler.Message) error {
	if m.Event.AmountCents <= 0 {
		return handler.Poison(fmt.Errorf("order %s: amount %d", m.Event.OrderID, m.Event.AmountCents))
	}
	var n int
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM processed_events WHERE event_id = $1`, m.EventID).Scan(&n); err != nil {
		return err
	}
	if n > 0 {
		return nil
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `UPDATE accounts SET balance_cents = balance_cents + $1 WHERE user_id = $2`,
		m.Event.AmountCents, m.Event.UserID); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO processed_events (event_id) VALUES ($1) ON CONFLICT DO NOTHING`, m.EventID); err != nil {
		return err
	}
	return tx.Commit()
}
