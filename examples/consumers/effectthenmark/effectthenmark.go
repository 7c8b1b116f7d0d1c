// Package effectthenmark is a broken consumer: it commits the effect, then
// the processed mark in a second transaction. A crash between the two
// commits leaves the effect unmarked; the redelivery applies it again.
package effectthenmark

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

// Handle checks, applies, then marks.
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
	if _, err := db.ExecContext(ctx, `INSERT INTO ledger (event_id, user_id, amount_cents) VALUES ($1, $2, $3)`,
		m.EventID, m.Event.UserID, m.Event.AmountCents); err != nil {
		return err
	}
	_, err := db.ExecContext(ctx, `INSERT INTO processed_events (event_id) VALUES ($1) ON CONFLICT DO NOTHING`, m.EventID)
	return err
}
