// Package alwaystransient is a broken consumer that never works: its
// INSERT names a column the deployed schema does not have (amount, where
// the table says amount_cents), so every delivery fails, is nacked as
// transient, and ends in the dead-letter queue after max_attempts. No
// event is ever applied, yet nothing is credited twice and every event is
// accounted for by the DLQ: only the law healthy-applied catches it.
package alwaystransient

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/idemcheck/idemcheck/impl/contract/handler"
)

// Schema is the consumer's tables, as deployed.
const Schema = `
CREATE TABLE ledger (
	event_id     TEXT    NOT NULL,
	user_id      TEXT    NOT NULL,
	amount_cents INTEGER NOT NULL
);
CREATE TABLE processed_events (
	event_id TEXT PRIMARY KEY
);`

// Handle checks, credits and marks in one transaction, as the ADR says, but
// its INSERT was written against another version of the schema.
func Handle(ctx context.Context, db *sql.DB, m handler.Message) error {
	if m.Event.AmountCents <= 0 {
		return handler.Poison(fmt.Errorf("order %s: amount %d", m.Event.OrderID, m.Event.AmountCents))
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	var n int
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM processed_events WHERE event_id = $1`, m.EventID).Scan(&n); err != nil || n > 0 {
		return err
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO ledger (event_id, user_id, amount) VALUES ($1, $2, $3)`,
		m.EventID, m.Event.UserID, m.Event.AmountCents); err != nil {
		return fmt.Errorf("credit %s: %w", m.EventID, err) // transient: the broker retries
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO processed_events (event_id) VALUES ($1)`, m.EventID); err != nil {
		return err
	}
	return tx.Commit()
}
