// Package secondconn is a correct consumer built on a library that reads
// on a second connection while its own transaction holds the write lock
// (examples/libraries/postings: the account's currency read on the
// *sql.DB, outside the transaction that checks the key and posts).
//
// On PostgreSQL the harness never flags it, nor on SQLite as the team runs
// it (SQLiteParams: WAL, a busy timeout, BEGIN IMMEDIATE), where the
// reader reads the committed state while the writer holds its lock. With
// SQLite's defaults (deferred BEGIN, no busy timeout) it is flagged, and
// rightly: two deferred transactions deadlock on the second connection's
// read, and SQLite answers SQLITE_BUSY at once, until the event's attempts
// are spent.
package secondconn

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"

	"github.com/idemcheck/idemcheck/examples/libraries/postings"
	"github.com/idemcheck/idemcheck/impl/contract/handler"
)

// Schema is the library's tables and the accounts the events credit.
const Schema = postings.Schema + `
INSERT INTO accounts (account_id, currency) VALUES ('u1', 'EUR'), ('u2', 'EUR');`

// SQLiteParams are the team's SQLite settings.
const SQLiteParams = "_pragma=journal_mode(WAL)&_pragma=busy_timeout(5000)&_txlock=immediate"

// NewWorker starts a worker with its ledger.
func NewWorker(_ string, db *sql.DB) (handler.Func, io.Closer, error) {
	ledger := postings.New(db)
	return func(ctx context.Context, _ *sql.DB, m handler.Message) error {
		if m.Event.AmountCents <= 0 {
			return handler.Poison(fmt.Errorf("order %s: amount %d", m.Event.OrderID, m.Event.AmountCents))
		}
		_, err := ledger.Post(ctx, postings.Posting{Key: m.EventID, Account: m.Event.UserID, Cents: m.Event.AmountCents})
		if errors.Is(err, postings.ErrUnknownAccount) {
			return handler.Poison(err)
		}
		return err
	}, nil, nil
}
