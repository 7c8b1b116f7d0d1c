// Package logautocommit is a broken consumer of a log broker: a batch
// consumer that applies each record in its own transaction, deduped by
// event id, and leaves the offsets to the client's automatic commit
// (enable.auto.commit). The client commits the positions of the records
// its fetches returned, applied or not: a batch that failed half way is
// committed at the next fetch once the interval passed, and a crash
// before it is fetched again loses what it did not apply.
package logautocommit

import (
	"context"
	"database/sql"
	"time"

	"github.com/idemcheck/idemcheck/consumertest/handler"
)

// Schema is the consumer's ledger, keyed by event id.
const Schema = `
CREATE TABLE ledger (
	event_id     TEXT    PRIMARY KEY,
	user_id      TEXT    NOT NULL,
	amount_cents INTEGER NOT NULL
);`

// Effects reads the ledger.
const Effects = "SELECT event_id, amount_cents FROM ledger"

// Consumer is the consumer as a team writes it.
var Consumer = handler.LogConsumer{
	Assigned:   func(context.Context, *sql.DB, []int) (map[int]int64, error) { return nil, nil }, // every partition at Committed
	Handle:     Handle,
	MaxBatch:   3,
	AutoCommit: time.Second,
}

// Handle applies each record once; the client commits.
func Handle(ctx context.Context, db *sql.DB, records []handler.Record, _ handler.Offsets) error {
	for _, r := range records {
		if _, err := db.ExecContext(ctx, `INSERT INTO ledger (event_id, user_id, amount_cents) VALUES ($1, $2, $3) ON CONFLICT (event_id) DO NOTHING`,
			r.EventID, r.Event.UserID, r.Event.AmountCents); err != nil {
			return err
		}
	}
	return nil
}
