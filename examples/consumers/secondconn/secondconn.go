// Package secondconn is a correct consumer built on a library that reads
// on a second connection while its own transaction holds the write lock
// (examples/libraries/postings: the account's currency read on the
// *sql.DB, outside the transaction that checks the key and posts).
//
// On PostgreSQL the harness never flags it. On SQLite in a file, as the
// team runs it (WAL, a busy timeout, BEGIN IMMEDIATE), the reader reads
// the committed state while the writer holds its lock, and the consumer is
// correct; but the harness's SQLite today is an in-memory database, whose
// readers wait for the writer: the read meets a lock only its own
// transaction can release, and the harness flags the consumer (see the
// test).
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
