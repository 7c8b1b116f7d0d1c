// Package logapplythencommit is a broken consumer of a log broker: it
// applies each batch, then commits its offset to the broker, and starts
// each partition at the committed offset, with no dedupe. A rebalance
// that moves a partition while a worker holds a batch lets the new owner
// read the batch again from the committed offset while the old one (a
// zombie) applies it: credited twice. Its commit then fails, fenced, but
// the effect is in.
package logapplythencommit

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

// Handle applies, then commits.
func Handle(ctx context.Context, db *sql.DB, records []handler.Record, log handler.Offsets) error {
	for _, r := range records {
		if _, err := db.ExecContext(ctx, `INSERT INTO ledger (event_id, user_id, amount_cents) VALUES ($1, $2, $3)`,
			r.EventID, r.Event.UserID, r.Event.AmountCents); err != nil {
			return err
		}
	}
	last := records[len(records)-1]
	return log.Commit(ctx, last.Partition, last.Offset+1)
}
