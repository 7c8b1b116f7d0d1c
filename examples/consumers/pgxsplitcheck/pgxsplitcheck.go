// Package pgxsplitcheck is a consumer written against pgx that checks for
// a duplicate outside its transaction: it looks the event up in
// processed_events on the pool, then, in a transaction, applies the
// effect and marks the event (ON CONFLICT DO NOTHING, so that the mark
// never fails). Two deliveries of one event that both look before either
// commits both apply it: the harness finds the double credit.
package pgxsplitcheck

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
	var seen int
	err := pool.QueryRow(ctx, `SELECT 1 FROM processed_events WHERE event_id = $1`, m.EventID).Scan(&seen)
	switch {
	case err == nil:
		return nil // a duplicate, as far as it can tell
	case !errors.Is(err, pgx.ErrNoRows):
		return err
	}
	return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `INSERT INTO ledger (event_id, user_id, amount_cents) VALUES ($1, $2, $3)`,
			m.EventID, m.Event.UserID, m.Event.AmountCents); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `INSERT INTO processed_events (event_id) VALUES ($1) ON CONFLICT DO NOTHING`, m.EventID)
		return err
	})
}
