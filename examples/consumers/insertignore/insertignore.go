// Package insertignore claims the event the MySQL way, with INSERT IGNORE
// into processed_events, then credits the ledger in the same transaction.
//
// Handle reads RowsAffected: 0 means another delivery claimed the event
// first (the key was there, and MySQL turned the duplicate into a
// warning), a duplicate to ack without crediting. It is correct: the
// harness never flags it. HandleUnchecked ignores RowsAffected, as if
// INSERT IGNORE failed on a duplicate: a redelivery claims nothing and
// credits again, which breaks single-credit.
package insertignore

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/idemcheck/idemcheck/impl/contract/handler"
)

// Schema is the consumer's tables.
const Schema = `
CREATE TABLE ledger (
	event_id     VARCHAR(64) NOT NULL,
	user_id      VARCHAR(64) NOT NULL,
	amount_cents BIGINT      NOT NULL
);
CREATE TABLE processed_events (
	event_id VARCHAR(64) PRIMARY KEY
);`

// Handle claims the event and credits it only when the claim inserted a
// row.
func Handle(ctx context.Context, db *sql.DB, m handler.Message) error {
	return handle(ctx, db, m, true)
}

// HandleUnchecked claims the event and credits it whatever the claim did.
func HandleUnchecked(ctx context.Context, db *sql.DB, m handler.Message) error {
	return handle(ctx, db, m, false)
}

func handle(ctx context.Context, db *sql.DB, m handler.Message, checked bool) error {
	if m.Event.AmountCents <= 0 {
		return handler.Poison(fmt.Errorf("order %s: amount %d", m.Event.OrderID, m.Event.AmountCents))
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	res, err := tx.ExecContext(ctx, `INSERT IGNORE INTO processed_events (event_id) VALUES (?)`, m.EventID)
	if err != nil {
		return err
	}
	n, err := res.RowsAffected()
	if err != nil {
		return err
	}
	if checked && n == 0 {
		return nil // a duplicate: the event is claimed already
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO ledger (event_id, user_id, amount_cents) VALUES (?, ?, ?)`,
		m.EventID, m.Event.UserID, m.Event.AmountCents); err != nil {
		return err
	}
	return tx.Commit()
}
