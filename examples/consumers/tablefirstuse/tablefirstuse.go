// Package tablefirstuse is a correct consumer built on a library that
// creates its own tables on first use (examples/libraries/inbox: CREATE
// TABLE IF NOT EXISTS and CREATE INDEX IF NOT EXISTS). The consumer's
// schema has only its ledger; the inbox table appears when a worker starts
// (NewWorker opens the inbox in the Worker factory, with the worker's
// *sql.DB) or when a worker handles its first message (NewLazyWorker). The
// harness never flags either, on SQLite or PostgreSQL, and Verify proves
// them within its bounds.
package tablefirstuse

import (
	"context"
	"database/sql"
	"fmt"
	"io"

	"github.com/idemcheck/idemcheck/examples/libraries/inbox"
	"github.com/idemcheck/idemcheck/impl/contract/handler"
)

// Schema is the consumer's own table; the inbox creates its own.
const Schema = `
CREATE TABLE ledger (
	event_id     TEXT    NOT NULL,
	user_id      TEXT    NOT NULL,
	amount_cents INTEGER NOT NULL
);`

// NewWorker starts a worker as the service starts: the inbox's tables are
// created before the first message.
func NewWorker(_ string, db *sql.DB) (handler.Func, io.Closer, error) {
	in, err := inbox.Open(context.Background(), db)
	if err != nil {
		return nil, nil, err
	}
	return handle(in), nil, nil
}

// NewLazyWorker starts a worker whose inbox creates its tables when the
// first message comes.
func NewLazyWorker(_ string, db *sql.DB) (handler.Func, io.Closer, error) {
	return handle(inbox.New(db)), nil, nil
}

// handle credits the ledger once per event, through the inbox.
func handle(in *inbox.Inbox) handler.Func {
	return func(ctx context.Context, _ *sql.DB, m handler.Message) error {
		if m.Event.AmountCents <= 0 {
			return handler.Poison(fmt.Errorf("order %s: amount %d", m.Event.OrderID, m.Event.AmountCents))
		}
		_, err := in.Process(ctx, m.EventID, func(ctx context.Context, tx *sql.Tx) error {
			_, err := tx.ExecContext(ctx, `INSERT INTO ledger (event_id, user_id, amount_cents) VALUES ($1, $2, $3)`,
				m.EventID, m.Event.UserID, m.Event.AmountCents)
			return err
		})
		return err
	}
}
