// Package markfirst is a broken consumer: it commits the processed mark
// first and the effect afterwards, in a second transaction. A crash between
// the two commits loses the event: its redelivery finds the mark and skips.
package markfirst

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

// Handle marks, commits, then applies.
func Handle(ctx context.Context, db *sql.DB, m handler.Message) error {
	if m.Event.AmountCents <= 0 {
		return handler.Poison(fmt.Errorf("order %s: amount %d", m.Event.OrderID, m.Event.AmountCents))
	}
	res, err := db.ExecContext(ctx, `INSERT INTO processed_events (event_id) VALUES ($1) ON CONFLICT DO NOTHING`, m.EventID)
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		return err // already processed (or the count failed)
	}
	_, err = db.ExecContext(ctx, `INSERT INTO ledger (event_id, user_id, amount_cents) VALUES ($1, $2, $3)`,
		m.EventID, m.Event.UserID, m.Event.AmountCents)
	return err
}
