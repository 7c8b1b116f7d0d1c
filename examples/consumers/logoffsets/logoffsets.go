// Package logoffsets is a correct consumer of a log broker: it keeps its
// position in each partition in its own table, written in the same
// transaction as the effects, and starts each partition it is assigned
// from there. The position moves only from the value the transaction
// read (a conditional update): a worker a rebalance left running on a
// partition it lost (a zombie) finds the position moved and rolls back,
// and an owner that finds records already applied skips them. The commit
// to the broker afterwards is for the group's lag alone; a fenced one is
// ignored.
package logoffsets

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/idemcheck/idemcheck/consumertest/handler"
)

// Schema is the consumer's tables: the ledger, in apply order, and its
// position per partition.
const Schema = `
CREATE TABLE ledger (
	seq          INTEGER PRIMARY KEY AUTOINCREMENT,
	event_id     TEXT    NOT NULL,
	user_id      TEXT    NOT NULL,
	amount_cents INTEGER NOT NULL
);
CREATE TABLE positions (
	partition_id INTEGER PRIMARY KEY,
	next_offset  INTEGER NOT NULL
);`

// SchemaPostgres is Schema in PostgreSQL's SQL (a sequence column of its
// own kind); the consumer's statements are the same.
const SchemaPostgres = `
CREATE TABLE ledger (
	seq          BIGSERIAL PRIMARY KEY,
	event_id     TEXT    NOT NULL,
	user_id      TEXT    NOT NULL,
	amount_cents INTEGER NOT NULL
);
CREATE TABLE positions (
	partition_id INTEGER PRIMARY KEY,
	next_offset  INTEGER NOT NULL
);`

// Effects reads the ledger in apply order.
const Effects = "SELECT event_id, amount_cents FROM ledger ORDER BY seq"

// errMoved says another worker moved the position while this one ran.
var errMoved = errors.New("the partition's position moved under this transaction")

// Consumer is the consumer as a team writes it.
var Consumer = handler.LogConsumer{Assigned: Assigned, Handle: Handle, MaxBatch: 2, Ordered: true}

// Assigned starts each partition at the position the consumer stored.
func Assigned(ctx context.Context, db *sql.DB, partitions []int) (map[int]int64, error) {
	out := map[int]int64{}
	for _, p := range partitions {
		next, _, err := position(ctx, db, p)
		if err != nil {
			return nil, err
		}
		out[p] = next
	}
	return out, nil
}

type querier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// position reads partition p's stored position (0 and false when none).
func position(ctx context.Context, q querier, p int) (int64, bool, error) {
	var next int64
	err := q.QueryRowContext(ctx, `SELECT next_offset FROM positions WHERE partition_id = $1`, p).Scan(&next)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, false, nil
	}
	return next, err == nil, err
}

// Handle applies the records not yet applied and moves the position, in
// one transaction.
func Handle(ctx context.Context, db *sql.DB, records []handler.Record, log handler.Offsets) error {
	p := records[0].Partition
	last := records[len(records)-1].Offset
	if err := apply(ctx, db, p, records); err != nil {
		return err
	}
	// The broker's offset only shows the group's lag: the position that
	// counts is committed already, so a commit that fails (fenced by a
	// rebalance, or lost) changes nothing that matters.
	_ = log.Commit(ctx, p, last+1)
	return nil
}

func apply(ctx context.Context, db *sql.DB, p int, records []handler.Record) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	next, stored, err := position(ctx, tx, p)
	if err != nil {
		return err
	}
	last := records[len(records)-1].Offset
	if next > last {
		return nil // applied already, by a worker that held the partition before
	}
	for _, r := range records {
		if r.Offset < next {
			continue
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO ledger (event_id, user_id, amount_cents) VALUES ($1, $2, $3)`,
			r.EventID, r.Event.UserID, r.Event.AmountCents); err != nil {
			return err
		}
	}
	if !stored {
		if _, err := tx.ExecContext(ctx, `INSERT INTO positions (partition_id, next_offset) VALUES ($1, $2)`, p, last+1); err != nil {
			return err
		}
		return tx.Commit()
	}
	res, err := tx.ExecContext(ctx, `UPDATE positions SET next_offset = $1 WHERE partition_id = $2 AND next_offset = $3`, last+1, p, next)
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil || n != 1 {
		return fmt.Errorf("partition %d: %w", p, errMoved)
	}
	return tx.Commit()
}
