// Package migrations is a correct consumer whose schema is applied by code,
// as a service applies it at start-up: a tiny migration runner (Migrate)
// with a schema_migrations table applies the SQL files embedded under
// migrations/sqlite or migrations/postgres, each whole, in a transaction of
// its own. The files are written as teams write them: -- and /* */
// comments (with quotes and semicolons in them), quoted values holding
// ';', '--' and '/*', a SQLite trigger whose body has statements of its
// own, and on PostgreSQL a PL/pgSQL trigger function with a $body$-quoted
// body. It is given to the harness as Consumer.Setup (Setup), with no
// Schema. The handler is the ADR pattern, crediting in the currency a
// migration seeded, and it leaves the amount's validation to the ledger's
// trigger, taking its refusal for a poison message: the harness never
// flags it, which it would if a migration were lost.
package migrations

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/idemcheck/idemcheck/impl/contract/handler"
)

// Setup returns the consumer's Setup for database d: its migrations.
func Setup(d Dialect) func(ctx context.Context, db *sql.DB) error {
	return func(ctx context.Context, db *sql.DB) error { return Migrate(ctx, db, d) }
}

// Handle credits the ledger once per event, in the configured currency.
func Handle(ctx context.Context, db *sql.DB, m handler.Message) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	var seen int
	err = tx.QueryRowContext(ctx, `SELECT 1 FROM processed_events WHERE event_id = $1`, m.EventID).Scan(&seen)
	switch {
	case err == nil:
		return nil // a duplicate
	case !errors.Is(err, sql.ErrNoRows):
		return err
	}
	var currency string
	if err := tx.QueryRowContext(ctx, `SELECT value FROM consumer_settings WHERE name = 'ledger.currency'`).Scan(&currency); err != nil {
		return fmt.Errorf("settings: %w", err)
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO ledger (event_id, user_id, amount_cents, currency) VALUES ($1, $2, $3, $4)`,
		m.EventID, m.Event.UserID, m.Event.AmountCents, currency); err != nil {
		if refused(err) {
			return handler.Poison(err)
		}
		return err
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO processed_events (event_id) VALUES ($1)`, m.EventID); err != nil {
		return err
	}
	return tx.Commit()
}

// refused recognises the ledger trigger's refusal (migration 0002): its
// message on both databases, and PostgreSQL's raise_exception SQLSTATE.
func refused(err error) bool {
	var pg interface{ SQLState() string }
	if errors.As(err, &pg) {
		return pg.SQLState() == "P0001" && strings.Contains(err.Error(), "ledger: amount")
	}
	return strings.Contains(err.Error(), "ledger: amount must be positive")
}
