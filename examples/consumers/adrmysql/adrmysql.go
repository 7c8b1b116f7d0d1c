// Package adrmysql is the consumer of the "idempotent consumer" ADR (see
// examples/consumers/adr) as a team on MySQL or MariaDB writes it: inside
// one transaction, look the event up in processed_events, credit the
// ledger, insert the processed row, commit. Two deliveries of one event
// meet at the processed row's key: the second waits for the first's
// transaction (a row lock) and fails on the duplicate key if it commits,
// or goes on if it rolls back. It is correct: the harness never flags it.
package adrmysql

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/idemcheck/idemcheck/impl/contract/handler"
)

// Schema is the consumer's tables.
const Schema = `
CREATE TABLE ledger (
	event_id     VARCHAR(64) NOT NULL,
	user_id      VARCHAR(64) NOT NULL,
	amount_cents BIGINT      NOT NULL,
	credited_at  DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6)
);
CREATE TABLE processed_events (
	event_id     VARCHAR(64) PRIMARY KEY,
	processed_at BIGINT      NOT NULL
);`

// Handle credits the ledger once per event.
func Handle(ctx context.Context, db *sql.DB, m handler.Message) error {
	if m.Event.AmountCents <= 0 {
		return handler.Poison(fmt.Errorf("order %s: amount %d", m.Event.OrderID, m.Event.AmountCents))
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()

	var seen int
	err = tx.QueryRowContext(ctx, `SELECT 1 FROM processed_events WHERE event_id = ?`, m.EventID).Scan(&seen)
	switch {
	case err == nil:
		return nil // a duplicate: already applied
	case !errors.Is(err, sql.ErrNoRows):
		return err
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO ledger (event_id, user_id, amount_cents) VALUES (?, ?, ?)`,
		m.EventID, m.Event.UserID, m.Event.AmountCents); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO processed_events (event_id, processed_at) VALUES (?, ?)`,
		m.EventID, m.Event.OccurredAtMs); err != nil {
		return err
	}
	return tx.Commit()
}
