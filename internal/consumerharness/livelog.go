package consumerharness

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/idemcheck/idemcheck/impl/contract/event"
	"github.com/idemcheck/idemcheck/impl/contract/handler"
)

// The seam a live driver of a log consumer (a team's LogConsumer played
// against a real log broker, package livelog) judges through: it records
// what the database held at the start, at each commit that landed and
// once quiet, and the laws are judged here, by the same functions that
// judge an in-memory run.

// PartitionOf is the partition an event of user goes to among n, as the
// in-memory log broker partitions it: a live driver produces each event
// to the same partition, so that one scenario means one layout.
func PartitionOf(user string, n int) int { return partitionOf(user, n) }

// ReadSnapshot reads the consumer's effects, dedupe and dead-letter
// queries through db (a connection of the driver's own, not a worker's).
func ReadSnapshot(ctx context.Context, db *sql.DB, c Consumer) (Snapshot, error) {
	return snapshotOf(ctx, db, func(q string) (string, []string) { return q, nil }, c)
}

// CommitAhead lists the records of partition p below next that have no
// effect in snap (nor a row in the consumer's own dead letters): a commit
// of next that landed while they were missing breaks commit-after-apply.
// Each is named "ID (offset N)".
func CommitAhead(c Consumer, s *Scenario, snap Snapshot, p int, next int64) []string {
	if c.Effects.Aggregate || s.Partitions == 0 {
		return nil
	}
	j := judge{c: c, o: &Outcome{Scenario: s}, s: s}
	applied := j.counts(snap)
	for _, id := range snap.DeadLetters {
		applied[id]++
	}
	var missing []string
	off := int64(0)
	for _, e := range s.Events {
		if partitionOf(e.User, s.Partitions) != p {
			continue
		}
		if off >= next {
			break
		}
		if applied[e.ID] <= 0 {
			missing = append(missing, fmt.Sprintf("%s (offset %d)", e.ID, off))
		}
		off++
	}
	return missing
}

// CommitAheadBreach is the commit-after-apply breach of a commit of next
// for partition p by worker, that landed while missing had no effect.
func CommitAheadBreach(worker string, p int, next int64, missing []string) Breach {
	return breach(LawCommitAfterApply, "a committed offset ran ahead of the applied effects",
		fmt.Sprintf("%s commits p%d at %d while %s had no committed effect", worker, p, next, strings.Join(missing, ", ")))
}

// JudgeLiveLog judges a live log run by the laws an in-memory log run is
// judged by (single-credit, nothing-lost, healthy-applied, atomicity with
// a Dedupe query, partition-order for an Ordered consumer) from the
// effects read before the first record and once quiet, with gap, the
// first commit that ran ahead of the effects (commit-after-apply), when
// there was one. deliveries are one per record handed to Handle, with
// the faults the driver caused in its call: healthy-applied excuses a
// record the consumer parked in its own dead letters by them, as it does
// in memory.
// A scenario with no policy is judged under DefaultPolicy's attempts,
// Check's.
func JudgeLiveLog(c Consumer, s *Scenario, base, quiet Snapshot, gap *Breach, deliveries []Delivery) []Breach {
	if s.Policy == (Policy{}) {
		withPolicy := *s
		withPolicy.Policy = DefaultPolicy
		s = &withPolicy
	}
	o := &Outcome{Scenario: s, Base: base, Quiet: quiet, CommitGap: gap, Deliveries: deliveries}
	return judge{c: c, o: o, s: s}.judgeLog()
}

// LiveRecord is the record a live driver hands the consumer for event i
// of s at partition p, offset off: the message an in-memory run would
// hand it, fetched attempts times.
func LiveRecord(s *Scenario, i, p int, off int64, attempts int) handler.Record {
	e := s.Events[i]
	ev := event.OrderPaid{EventID: e.ID, OccurredAtMs: startMs, OrderID: e.order(), UserID: e.User, AmountCents: e.Amount}
	return handler.Record{Message: handler.Message{EventID: e.ID, Event: ev, Topic: Topic, Group: Group, IdempotencyKey: e.ID,
		Attempts: attempts}, Partition: p, Offset: off}
}
