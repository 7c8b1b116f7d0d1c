// Package sweeper is a consumer built on an idempotency-key store whose
// constructor starts a clean-up goroutine (examples/libraries/idemkeys: a
// time.Ticker deleting expired keys with SQL, stopped by Close). Each
// worker builds its store in the Worker factory, over the worker's
// *sql.DB; the handler claims the event's key and credits the ledger in
// one transaction.
//
// NewWorker returns the store as the worker's Closer: the harness never
// flags it, the sweeps running between the steps of the schedule.
// NewWorkerNeverClosed keeps the store for the life of the process and
// never closes it, as many services do: its sweeper outlives the worker.
// Declared with Consumer.Lingering, the harness tolerates it and never
// flags the consumer; undeclared, it reports the goroutine left running
// (law runs) with its stack, as started by the Worker factory.
package sweeper

import (
	"context"
	"database/sql"
	"fmt"
	"io"

	"github.com/idemcheck/idemcheck/examples/libraries/idemkeys"
	"github.com/idemcheck/idemcheck/impl/contract/handler"
)

// Schema is the consumer's ledger and the store's table.
const Schema = `
CREATE TABLE ledger (
	event_id     TEXT    NOT NULL,
	user_id      TEXT    NOT NULL,
	amount_cents INTEGER NOT NULL
);` + idemkeys.Schema

// NewWorker starts a worker with a store of its own, closed with it.
func NewWorker(_ string, db *sql.DB) (handler.Func, io.Closer, error) {
	keys := idemkeys.New(db, idemkeys.Options{})
	return handle(keys), keys, nil
}

// NewWorkerNeverClosed starts a worker whose store lives as long as the
// process: nothing closes it.
func NewWorkerNeverClosed(_ string, db *sql.DB) (handler.Func, io.Closer, error) {
	return handle(idemkeys.New(db, idemkeys.Options{})), nil, nil
}

// handle credits the ledger once per event key.
func handle(keys *idemkeys.Store) handler.Func {
	return func(ctx context.Context, db *sql.DB, m handler.Message) error {
		if m.Event.AmountCents <= 0 {
			return handler.Poison(fmt.Errorf("order %s: amount %d", m.Event.OrderID, m.Event.AmountCents))
		}
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		defer tx.Rollback()
		claimed, err := keys.Claim(ctx, tx, m.IdempotencyKey)
		if err != nil || !claimed {
			return err // a failure, or a duplicate
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO ledger (event_id, user_id, amount_cents) VALUES ($1, $2, $3)`,
			m.EventID, m.Event.UserID, m.Event.AmountCents); err != nil {
			return err
		}
		return tx.Commit()
	}
}
