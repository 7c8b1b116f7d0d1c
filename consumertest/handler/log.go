package handler

import contract "github.com/idemcheck/idemcheck/impl/contract/handler"

// A consumer of a log broker (consumertest.Consumer.Log): partitions,
// offsets and a consumer group, as Kafka's clients show them.
//
//	Log: &handler.LogConsumer{
//		Assigned: func(ctx context.Context, db *sql.DB, partitions []int) (map[int]int64, error) {
//			return readPositions(ctx, db, partitions) // kept in the effects' transaction
//		},
//		Handle: func(ctx context.Context, db *sql.DB, records []handler.Record, log handler.Offsets) error {
//			return applyWithPosition(ctx, db, records)
//		},
//	},

// Record is one record of a partition: a Message at its partition and
// offset.
type Record = contract.Record

// LogConsumer is a team's consumer of a log broker: where each partition
// it is given starts (Assigned) and what it does with the records it
// fetches (Handle).
type LogConsumer = contract.LogConsumer

// Offsets commits offsets to the broker from Handle.
type Offsets = contract.Offsets

// Committed is the start Assigned returns for a partition to read from
// the offset committed to the broker.
const Committed = contract.Committed

// ErrFenced is the error of a commit by a worker a rebalance took the
// partition from.
var ErrFenced = contract.ErrFenced
