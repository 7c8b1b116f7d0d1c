// Package upsertfirst is a correct consumer that claims the event with an
// upsert that does nothing on conflict, then applies the effect in the same
// transaction:
//
//	INSERT INTO processed_events (event_id) VALUES ($1) ON CONFLICT (event_id) DO NOTHING
//
// and reads RowsAffected: 0 means another delivery marked the event first,
// a duplicate to ack without applying. Unlike insert-first, no error is
// involved, so the transaction stays usable on PostgreSQL too (a unique
// violation would abort it). HandleOrIgnore is the SQLite spelling,
// INSERT OR IGNORE. The harness never flags either, and Verify proves them
// within its bounds.
package upsertfirst

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

// The claims, as SQLite and PostgreSQL write them (SQLite accepts both).
const (
	claimOnConflict = `INSERT INTO processed_events (event_id) VALUES ($1) ON CONFLICT (event_id) DO NOTHING`
	claimOrIgnore   = `INSERT OR IGNORE INTO processed_events (event_id) VALUES ($1)`
)

// Handle claims with ON CONFLICT DO NOTHING (SQLite and PostgreSQL).
func Handle(ctx context.Context, db *sql.DB, m handler.Message) error {
	return handle(ctx, db, m, claimOnConflict)
}

// HandleOrIgnore claims with INSERT OR IGNORE (SQLite).
func HandleOrIgnore(ctx context.Context, db *sql.DB, m handler.Message) error {
	return handle(ctx, db, m, claimOrIgnore)
}

func handle(ctx context.Context, db *sql.DB, m handler.Message, claim string) error {
	if m.Event.AmountCents <= 0 {
		return handler.Poison(fmt.Errorf("order %s: amount %d", m.Event.OrderID, m.Event.AmountCents))
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	res, err := tx.ExecContext(ctx, claim, m.EventID)
	if err != nil {
		return err
	}
	n, err := res.RowsAffected()
	if err != nil {
		return err
	}
	if n == 0 {
		return nil // a duplicate: the event is marked already
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO ledger (event_id, user_id, amount_cents) VALUES ($1, $2, $3)`,
		m.EventID, m.Event.UserID, m.Event.AmountCents); err != nil {
		return err
	}
	return tx.Commit()
}
