// Package insertfirst is a correct consumer: inside one transaction it
// first inserts the event into processed_events, where a unique violation
// means "a duplicate, skip it", then applies the effect, and commits both
// together.
package insertfirst

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

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

// Handle marks the event first and skips it if the mark exists.
func Handle(ctx context.Context, db *sql.DB, m handler.Message) error {
	if m.Event.AmountCents <= 0 {
		return handler.Poison(fmt.Errorf("order %s: amount %d", m.Event.OrderID, m.Event.AmountCents))
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `INSERT INTO processed_events (event_id) VALUES ($1)`, m.EventID); err != nil {
		if isUniqueViolation(err) {
			return nil // a duplicate
		}
		return err
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO ledger (event_id, user_id, amount_cents) VALUES ($1, $2, $3)`,
		m.EventID, m.Event.UserID, m.Event.AmountCents); err != nil {
		return err
	}
	return tx.Commit()
}

// isUniqueViolation recognises a duplicate key on SQLite (the message) and
// on PostgreSQL (SQLSTATE 23505, through the driver's SQLState method).
func isUniqueViolation(err error) bool {
	var pg interface{ SQLState() string }
	if errors.As(err, &pg) && pg.SQLState() == "23505" {
		return true
	}
	return strings.Contains(err.Error(), "UNIQUE constraint failed")
}
