// Package ttl is the idempotent consumer with the retention its pattern
// prescribes, written the way the pattern's note writes it: the processed
// record is stamped by the database (processed_at defaults to its now),
// and processed records older than the retention window are deleted by
// the database's own clock:
//
//	processed_at TIMESTAMPTZ NOT NULL DEFAULT NOW()
//	DELETE FROM processed_events WHERE processed_at < NOW() - INTERVAL '30 days'
//
// (on SQLite: DEFAULT CURRENT_TIMESTAMP, and datetime('now', '-30 days')).
// The check, the effect and the mark are one transaction, as in the ADR;
// the clean-up runs before each event (the team's nightly job, folded into
// the consumer).
//
// It is correct only while the window is longer than the time in which
// an event can come back: a redelivery, a duplicate, a replay of the
// stream. With a window shorter than that (Short, ten seconds, where the
// broker redelivers for up to four attempts of a five-second ack timeout,
// and may replay the stream at any time), the clean-up deletes the record
// of an event that is then delivered again, and the event is credited a
// second time. With the pattern's thirty days (Long), it is never caught.
package ttl

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/idemcheck/idemcheck/impl/contract/handler"
)

// Dialect is the SQL the consumer is written in.
type Dialect int

// The dialects.
const (
	SQLite Dialect = iota
	Postgres
)

// The retention windows, as the database writes an interval.
const (
	// Short is shorter than the broker's redelivery window.
	Short = "10 seconds"
	// Long is the pattern's.
	Long = "30 days"
)

// Schema returns the consumer's tables in d's SQL.
func Schema(d Dialect) string {
	if d == Postgres {
		return `
CREATE TABLE ledger (
	event_id     TEXT   NOT NULL,
	user_id      TEXT   NOT NULL,
	amount_cents BIGINT NOT NULL
);
CREATE TABLE processed_events (
	event_id     TEXT PRIMARY KEY,
	processed_at TIMESTAMPTZ NOT NULL DEFAULT NOW()
);`
	}
	return `
CREATE TABLE ledger (
	event_id     TEXT    NOT NULL,
	user_id      TEXT    NOT NULL,
	amount_cents INTEGER NOT NULL
);
CREATE TABLE processed_events (
	event_id     TEXT PRIMARY KEY,
	processed_at TEXT NOT NULL DEFAULT CURRENT_TIMESTAMP
);`
}

// Handler returns the consumer's handler in d's SQL, keeping processed
// records for window ("30 days").
func Handler(d Dialect, window string) handler.Func {
	cleanup := fmt.Sprintf(`DELETE FROM processed_events WHERE processed_at < datetime('now', '-%s')`, window)
	if d == Postgres {
		cleanup = fmt.Sprintf(`DELETE FROM processed_events WHERE processed_at < NOW() - INTERVAL '%s'`, window)
	}
	return func(ctx context.Context, db *sql.DB, m handler.Message) error {
		if m.Event.AmountCents <= 0 {
			return handler.Poison(fmt.Errorf("order %s: amount %d", m.Event.OrderID, m.Event.AmountCents))
		}
		if _, err := db.ExecContext(ctx, cleanup); err != nil {
			return err
		}
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		defer tx.Rollback()
		var seen int
		err = tx.QueryRowContext(ctx, `SELECT 1 FROM processed_events WHERE event_id = $1`, m.EventID).Scan(&seen)
		switch {
		case err == nil:
			return nil // a duplicate: already applied
		case !errors.Is(err, sql.ErrNoRows):
			return err
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO ledger (event_id, user_id, amount_cents) VALUES ($1, $2, $3)`,
			m.EventID, m.Event.UserID, m.Event.AmountCents); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO processed_events (event_id) VALUES ($1)`, m.EventID); err != nil {
			return err
		}
		return tx.Commit()
	}
}
