// Package inbox is a library-shaped example: the inbox of the transactional
// inbox pattern over database/sql. Each incoming message id is recorded in
// the inbox table in the same transaction as the work it triggers, so a
// message is processed once however often it is delivered.
//
// Like many such libraries it owns its tables and creates them itself, with
// CREATE TABLE IF NOT EXISTS and CREATE INDEX IF NOT EXISTS: at once in
// Open, or on first use with New (the first Process creates them). The
// application's schema need not know them. The SQL is the common subset of
// SQLite and PostgreSQL.
//
// It knows nothing of idemcheck; examples/consumers/tablefirstuse puts a
// consumer built on it under the harness.
package inbox

import (
	"context"
	"database/sql"
	"fmt"
	"sync"
)

// Table is the inbox table's name.
const Table = "inbox_messages"

// ddl creates the inbox's tables, idempotently.
var ddl = []string{
	`CREATE TABLE IF NOT EXISTS inbox_messages (
	message_id  TEXT PRIMARY KEY,
	received_at TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP
)`,
	`CREATE INDEX IF NOT EXISTS inbox_messages_received_at ON inbox_messages (received_at)`,
}

// Inbox records processed message ids in its table.
type Inbox struct {
	db *sql.DB

	mu    sync.Mutex
	ready bool // the tables exist
}

// New returns an inbox over db that creates its tables on first use.
func New(db *sql.DB) *Inbox { return &Inbox{db: db} }

// Open returns an inbox over db, its tables created.
func Open(ctx context.Context, db *sql.DB) (*Inbox, error) {
	in := New(db)
	if err := in.ensure(ctx); err != nil {
		return nil, err
	}
	return in, nil
}

// ensure creates the tables once per Inbox; a failure is retried by the
// next call.
func (in *Inbox) ensure(ctx context.Context) error {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.ready {
		return nil
	}
	for _, stmt := range ddl {
		if _, err := in.db.ExecContext(ctx, stmt); err != nil {
			return fmt.Errorf("inbox: create tables: %w", err)
		}
	}
	in.ready = true
	return nil
}

// Process runs fn in a transaction unless message id was processed
// before: the id is recorded in the same transaction, so that fn's work
// and the record commit together or not at all. It reports whether fn
// ran and committed; a message seen before is (false, nil).
func (in *Inbox) Process(ctx context.Context, id string, fn func(ctx context.Context, tx *sql.Tx) error) (bool, error) {
	if err := in.ensure(ctx); err != nil {
		return false, err
	}
	tx, err := in.db.BeginTx(ctx, nil)
	if err != nil {
		return false, err
	}
	defer tx.Rollback()
	res, err := tx.ExecContext(ctx, `INSERT INTO inbox_messages (message_id) VALUES ($1) ON CONFLICT (message_id) DO NOTHING`, id)
	if err != nil {
		return false, err
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		return false, err // seen before
	}
	if err := fn(ctx, tx); err != nil {
		return false, err
	}
	if err := tx.Commit(); err != nil {
		return false, err
	}
	return true, nil
}
