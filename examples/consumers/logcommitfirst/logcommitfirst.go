// Package logcommitfirst is a broken consumer of a log broker: it commits
// each record's offset to the broker before applying it, and starts each
// partition at the committed offset. A worker that crashes (or loses the
// partition) between the commit and the effect leaves a record no one
// will read again: lost.
package logcommitfirst

import (
	"context"
	"database/sql"

	"github.com/idemcheck/idemcheck/consumertest/handler"
)

// Schema is the consumer's ledger.
const Schema = `
CREATE TABLE ledger (
	event_id     TEXT    NOT NULL,
	user_id      TEXT    NOT NULL,
	amount_cents INTEGER NOT NULL
);`

// Effects reads the ledger.
const Effects = "SELECT event_id, amount_cents FROM ledger"

// Consumer is the consumer as a team writes it.
var Consumer = handler.LogConsumer{
	Assigned: func(context.Context, *sql.DB, []int) (map[int]int64, error) { return nil, nil }, // every partition at Committed
	Handle:   Handle,
}

// Handle commits, then applies.
func Handle(ctx context.Context, db *sql.DB, records []handler.Record, log handler.Offsets) error {
	for _, r := range records {
		if err := log.Commit(ctx, r.Partition, r.Offset+1); err != nil {
			return err
		}
		if _, err := db.ExecContext(ctx, `INSERT INTO ledger (event_id, user_id, amount_cents) VALUES ($1, $2, $3)`,
			r.EventID, r.Event.UserID, r.Event.AmountCents); err != nil {
			return err
		}
	}
	return nil
}
