// Package pgxbatch is a consumer written against pgx that marks an event
// and applies it in one round trip: a pgx.Batch of the mark (an INSERT
// into processed_events, whose key refuses a second one) and the effect
// (a ledger row), sent with SendBatch. PostgreSQL runs a batch's
// statements as one implicit transaction: a delivery of an event marked
// already fails at the mark, and its effect is rolled back with it; the
// handler takes that unique violation for "applied already". The effect
// and the mark land together or not at all: it is correct.
package pgxbatch

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
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

// Handle marks and applies the event in one batch.
func Handle(ctx context.Context, pool *pgxpool.Pool, m handler.Message) error {
	if m.Poisoned() {
		return handler.Poison(errors.New("no such order"))
	}
	b := &pgx.Batch{}
	b.Queue(`INSERT INTO processed_events (event_id) VALUES ($1)`, m.EventID)
	b.Queue(`INSERT INTO ledger (event_id, user_id, amount_cents) VALUES ($1, $2, $3)`,
		m.EventID, m.Event.UserID, m.Event.AmountCents)
	err := pool.SendBatch(ctx, b).Close()
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == "23505" {
		return nil // marked already: applied by an earlier delivery
	}
	return err
}
