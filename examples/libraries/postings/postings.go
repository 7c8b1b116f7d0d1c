// Package postings is a library-shaped example: it posts an entry to a
// ledger once per idempotency key, in a transaction of its own, and reads
// the account's currency, reference data, on the *sql.DB it was given
// rather than in that transaction: while its transaction holds the write
// lock, it reads on a second connection.
//
// That is sound wherever readers do not wait for a writer: PostgreSQL
// (MVCC), and SQLite in a file, whose readers read the last committed
// state while a writer holds its RESERVED lock, in WAL mode and in
// rollback-journal mode alike. The SQL is the common subset of SQLite and
// PostgreSQL; Schema is the library's tables, which the application
// creates and whose accounts it fills.
//
// It knows nothing of idemcheck; examples/consumers/secondconn puts a
// consumer built on it under the harness.
package postings

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// Schema is the library's tables.
const Schema = `
CREATE TABLE accounts (
	account_id TEXT PRIMARY KEY,
	currency   TEXT NOT NULL
);
CREATE TABLE postings (
	idem_key     TEXT PRIMARY KEY,
	account_id   TEXT    NOT NULL REFERENCES accounts (account_id),
	amount_cents INTEGER NOT NULL,
	currency     TEXT    NOT NULL
);`

// ErrUnknownAccount is returned for a posting to an account not in the
// accounts table: it can never succeed.
var ErrUnknownAccount = errors.New("postings: unknown account")

// Posting is an amount for an account, under an idempotency key.
type Posting struct {
	Key     string
	Account string
	Cents   int64
}

// Ledger posts entries through db.
type Ledger struct{ db *sql.DB }

// New returns a ledger over db.
func New(db *sql.DB) *Ledger { return &Ledger{db: db} }

// Post records p unless its key was posted before: true when it posted.
func (l *Ledger) Post(ctx context.Context, p Posting) (bool, error) {
	tx, err := l.db.BeginTx(ctx, nil)
	if err != nil {
		return false, err
	}
	defer tx.Rollback()
	var seen int
	err = tx.QueryRowContext(ctx, `SELECT 1 FROM postings WHERE idem_key = $1`, p.Key).Scan(&seen)
	switch {
	case err == nil:
		return false, nil // posted before
	case !errors.Is(err, sql.ErrNoRows):
		return false, err
	}
	currency, err := l.currency(ctx, p.Account)
	if err != nil {
		return false, err
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO postings (idem_key, account_id, amount_cents, currency) VALUES ($1, $2, $3, $4)`,
		p.Key, p.Account, p.Cents, currency); err != nil {
		return false, err
	}
	return true, tx.Commit()
}

// currency reads the account's currency. Reference data, read on the
// pool: a second connection when called inside Post's transaction.
func (l *Ledger) currency(ctx context.Context, account string) (string, error) {
	var c string
	err := l.db.QueryRowContext(ctx, `SELECT currency FROM accounts WHERE account_id = $1`, account).Scan(&c)
	if errors.Is(err, sql.ErrNoRows) {
		return "", fmt.Errorf("%w %q", ErrUnknownAccount, account)
	}
	return c, err
}
