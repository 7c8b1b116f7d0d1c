package handler

import (
	"context"
	"database/sql"
	"errors"
	"time"
)

// The contract of a consumer of a log broker (Kafka's model): a topic of
// partitions, each an ordered log of records at offsets from 0; a
// consumer group whose partitions are assigned to its workers; an offset
// committed to the broker per partition. A worker reads each partition it
// owns from a position of its own, and the consumer decides where that
// position starts (Assigned) and when the broker is told (Offsets.Commit,
// or AutoCommit).

// Record is one record of a partition: the Message it carries (Attempts
// counts the fetches of its batch; LastError is the answer of the
// previous one) at its Partition and Offset.
type Record struct {
	Message
	Partition int
	Offset    int64
}

// Committed is the position Assigned returns for a partition to start at
// the offset committed to the broker (0 when none was committed), as a
// Kafka consumer that keeps no offsets of its own does.
const Committed int64 = -1

// ErrFenced is the error of a commit by a worker that no longer owns the
// partition: a rebalance moved it to another worker since the worker
// fetched the batch (the group's generation moved on), as Kafka's
// CommitFailedException says. The commit changed nothing.
var ErrFenced = errors.New("commit failed: the partition was reassigned (generation fenced)")

// Offsets commits offsets to the broker on behalf of the worker that
// handles a batch.
type Offsets interface {
	// Commit commits next (the offset of the next record to read) for
	// partition, synchronously. It fails with ErrFenced when the worker
	// lost the partition in a rebalance, and with a transient error when
	// the call fails as a lost connection does.
	Commit(ctx context.Context, partition int, next int64) error
}

// LogConsumer is a team's consumer of a log broker, unchanged in shape
// from production: where each partition starts, and what to do with the
// records fetched from it.
type LogConsumer struct {
	// Assigned is called when a worker is given partitions: when it
	// starts, after it restarts from a crash, after a rebalance gives it
	// a partition, and when the group's offsets are reset (a replay). It
	// returns where to start reading each partition: an offset the
	// consumer keeps itself (in its own table, say), or Committed. A
	// partition missing from the map starts at Committed. An error makes
	// the worker call it again later.
	Assigned func(ctx context.Context, db *sql.DB, partitions []int) (map[int]int64, error)
	// Handle is given records fetched from one partition, in offset order
	// (at most MaxBatch of them). Returning nil moves the worker's
	// position past them; any other error (a transient failure) makes it
	// fetch the same records again after the broker's backoff. Poison(err)
	// moves the position past them as nil does: a log has no dead-letter
	// queue, and a consumer that gives up on a record records it in its
	// own dead letters (see the harness's DeadLetters query).
	Handle func(ctx context.Context, db *sql.DB, records []Record, log Offsets) error
	// MaxBatch bounds the records of one fetch; 0 means 1.
	MaxBatch int
	// AutoCommit, when positive, has the client commit the positions of
	// the records returned by earlier fetches each time it fetches after
	// AutoCommit passed since its last automatic commit, as a Kafka
	// client with enable.auto.commit does.
	AutoCommit time.Duration
	// Ordered says the consumer claims to apply each partition's records
	// in offset order (a projection): the harness then judges that law
	// from the order of the effects query's rows.
	Ordered bool
}
