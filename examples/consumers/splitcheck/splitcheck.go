// Package splitcheck is a broken consumer: it looks the event up in one
// transaction and applies the effect and the mark in another. Two workers
// handling two copies of the event both pass the check before either
// commits, and the ledger is credited twice.
package splitcheck

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
	event_id TEXT PRIMARY KEY
);`

// Handle checks, then applies.
func Handle(ctx context.Context, db *sql.DB, m handler.Message) error {
	if m.Event.AmountCents <= 0 {
		return handler.Poison(fmt.Errorf("order %s: amount %d", m.Event.OrderID, m.Event.AmountCents))
	}
	done, err := alreadyProcessed(ctx, db, m.EventID)
	if err != nil || done {
		return err
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `INSERT INTO ledger (event_id, user_id, amount_cents) VALUES ($1, $2, $3)`,
		m.EventID, m.Event.UserID, m.Event.AmountCents); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO processed_events (event_id) VALUES ($1) ON CONFLICT DO NOTHING`, m.EventID); err != nil {
		return err
	}
	return tx.Commit()
}

func alreadyProcessed(ctx context.Context, db *sql.DB, id string) (bool, error) {
	tx, err := db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return false, err
	}
	defer tx.Rollback()
	var n int
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM processed_events WHERE event_id = $1`, id).Scan(&n); err != nil {
		return false, err
	}
	return n > 0, tx.Commit()
}
