// Package pgxcheckintx is a consumer written against pgx that looks for a
// duplicate inside its transaction: it looks the event up in
// processed_events, applies the effect and marks the event (ON CONFLICT
// DO NOTHING, so that the mark never fails), all in one transaction. It
// reads as safe, but under PostgreSQL's default isolation (READ
// COMMITTED) two transactions open side by side both find no mark; the
// second mark waits for the first transaction's row, then does nothing,
// and both credits commit. The harness finds the double credit: it needs
// the two workers' transactions open at once.
package pgxcheckintx

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/idemcheck/idemcheck/consumertest/handler"
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

// Handle credits the ledger, once per event unless two deliveries race.
func Handle(ctx context.Context, pool *pgxpool.Pool, m handler.Message) error {
	if m.Poisoned() {
		return handler.Poison(errors.New("no such order"))
	}
	return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		var seen int
		err := tx.QueryRow(ctx, `SELECT 1 FROM processed_events WHERE event_id = $1`, m.EventID).Scan(&seen)
		switch {
		case err == nil:
			return nil // a duplicate, as far as this transaction can tell
		case !errors.Is(err, pgx.ErrNoRows):
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO ledger (event_id, user_id, amount_cents) VALUES ($1, $2, $3)`,
			m.EventID, m.Event.UserID, m.Event.AmountCents); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `INSERT INTO processed_events (event_id) VALUES ($1) ON CONFLICT DO NOTHING`, m.EventID)
		return err
	})
}
