// Package dupkeybalance is a broken consumer: it credits the balance with
// an upsert, trusting the upsert to be idempotent,
//
//	INSERT INTO accounts (user_id, balance_cents) VALUES (?, ?)
//	ON DUPLICATE KEY UPDATE balance_cents = balance_cents + VALUES(balance_cents)
//
// and records the event with INSERT IGNORE in the same transaction,
// without reading it first. The upsert makes the row exist once, but adds
// the amount every time it runs: a redelivery of a processed event credits
// the account again.
package dupkeybalance

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/idemcheck/idemcheck/impl/contract/handler"
)

// Schema is the consumer's tables.
const Schema = `
CREATE TABLE accounts (
	user_id       VARCHAR(64) PRIMARY KEY,
	balance_cents BIGINT NOT NULL
);
CREATE TABLE processed_events (
	event_id VARCHAR(64) PRIMARY KEY
);`

// Handle upserts the balance and records the event.
func Handle(ctx context.Context, db *sql.DB, m handler.Message) error {
	if m.Event.AmountCents <= 0 {
		return handler.Poison(fmt.Errorf("order %s: amount %d", m.Event.OrderID, m.Event.AmountCents))
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `INSERT INTO accounts (user_id, balance_cents) VALUES (?, ?)
ON DUPLICATE KEY UPDATE balance_cents = balance_cents + VALUES(balance_cents)`, m.Event.UserID, m.Event.AmountCents); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `INSERT IGNORE INTO processed_events (event_id) VALUES (?)`, m.EventID); err != nil {
		return err
	}
	return tx.Commit()
}
