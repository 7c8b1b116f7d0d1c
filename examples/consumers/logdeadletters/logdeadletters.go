// Package logdeadletters is a consumer of a log broker that keeps its own
// dead letters, as teams do on Kafka, which has no dead-letter queue: a
// record whose handling fails is fetched again (the position does not
// move) until it has failed MaxFailures fetches in a row; then it is
// written to dead_letters, and the offset is committed past it, so that
// one bad record does not stall its partition. Each record is applied in
// one transaction with its mark in processed_events, and the offset is
// committed to the broker after the effect (or the dead letter), so a
// record fetched again after a crash, a rebalance or a reset of the
// group's offsets is skipped.
//
// Consumer (MaxFailures = 3) is correct: given to the harness with
// Consumer.DeadLetters, it is never flagged; a healthy record reaches
// dead_letters only after three fetches the harness's own faults failed.
// ConsumerNoRetry (one failure) is broken: a single transient failure (a
// lost connection) parks a healthy record for good, where retrying would
// have applied it, and the harness catches it as healthy-applied.
package logdeadletters

import (
	"context"
	"database/sql"

	"github.com/idemcheck/idemcheck/consumertest/handler"
)

// Schema is the consumer's tables.
const Schema = `
CREATE TABLE ledger (
	event_id     TEXT    NOT NULL,
	user_id      TEXT    NOT NULL,
	amount_cents INTEGER NOT NULL
);
CREATE TABLE processed_events (
	event_id TEXT PRIMARY KEY
);
CREATE TABLE dead_letters (
	event_id     TEXT    PRIMARY KEY,
	partition_id INTEGER NOT NULL,
	record_at    INTEGER NOT NULL,
	reason       TEXT    NOT NULL
);`

// Effects reads the ledger; DeadLetters reads the records the consumer
// gave up on (Consumer.DeadLetters).
const (
	Effects     = "SELECT event_id, amount_cents FROM ledger"
	DeadLetters = "SELECT event_id FROM dead_letters"
)

// MaxFailures is how many fetches of a record in a row Consumer lets fail
// before it parks the record.
const MaxFailures = 3

// Consumer parks a record after MaxFailures failed fetches.
var Consumer = New(MaxFailures)

// ConsumerNoRetry parks a record at its first failure.
var ConsumerNoRetry = New(1)

// New returns the consumer that parks a record once maxFailures fetches
// of it in a row failed. It fetches one record at a time: a record's
// Attempts count the fetches of its batch, and a batch of several would
// count a record's fetches that failed on the records before it.
func New(maxFailures int) handler.LogConsumer {
	return handler.LogConsumer{
		// Every partition starts at the offset committed to the broker:
		// the dedupe makes a record fetched again harmless.
		Assigned: func(context.Context, *sql.DB, []int) (map[int]int64, error) { return nil, nil },
		Handle: func(ctx context.Context, db *sql.DB, records []handler.Record, log handler.Offsets) error {
			return handle(ctx, db, records, log, maxFailures)
		},
	}
}

func handle(ctx context.Context, db *sql.DB, records []handler.Record, log handler.Offsets, maxFailures int) error {
	for _, r := range records {
		err := credit(ctx, db, r)
		if err == nil {
			continue
		}
		if r.Attempts < maxFailures {
			return err // fetched again after the backoff
		}
		if _, perr := db.ExecContext(ctx, `INSERT INTO dead_letters (event_id, partition_id, record_at, reason) VALUES ($1, $2, $3, $4) ON CONFLICT (event_id) DO NOTHING`,
			r.EventID, r.Partition, r.Offset, err.Error()); perr != nil {
			return err // not parked: fetched again
		}
	}
	last := records[len(records)-1]
	// The commit follows the effects (or the dead letter). A fenced one
	// means a rebalance gave the partition to another worker, which
	// fetches the records again and finds them applied; a lost one is
	// made good by the next commit. Neither undoes what was applied.
	_ = log.Commit(ctx, last.Partition, last.Offset+1)
	return nil
}

// credit applies the record unless it was applied or parked, in one
// transaction with its mark.
func credit(ctx context.Context, db *sql.DB, r handler.Record) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	var seen int
	if err := tx.QueryRowContext(ctx, `SELECT (SELECT count(*) FROM processed_events WHERE event_id = $1) + (SELECT count(*) FROM dead_letters WHERE event_id = $1)`,
		r.EventID).Scan(&seen); err != nil {
		return err
	}
	if seen > 0 {
		return nil // applied, or left for an operator
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO ledger (event_id, user_id, amount_cents) VALUES ($1, $2, $3)`,
		r.EventID, r.Event.UserID, r.Event.AmountCents); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO processed_events (event_id) VALUES ($1)`, r.EventID); err != nil {
		return err
	}
	return tx.Commit()
}
