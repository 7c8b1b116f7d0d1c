// Package redisstore implements the store contract over Redis with the
// popular "set-if-absent, then apply the effect" pattern — and therefore
// with its known weakness: the effect and the processed mark are two
// separate writes, not one transaction. The harness is meant to find that
// weakness; FINDING.md records the minimal counterexample it shrinks to.
//
// Layout, under a per-store key prefix P (one per run, so every run starts
// from an empty store and Close drops it):
//
//	P records  hash: JSON [tenant, consumer, id] -> JSON store.Record
//	P ledger   hash: JSON [consumer, eventId]    -> JSON store.Entry (HSETNX: the unique constraint)
//	P token    string: INCR issues fencing tokens for the whole store
//
// Operations:
//   - Claim is the set-if-absent: a record that is absent, failed, or whose
//     lease ran out is replaced by a processing record with a fresh token
//     from INCR. The pattern's SET NX PX relies on Redis expiring the lease
//     key on the machine's real clock, which would make a run depend on
//     wall time; here the lease is leaseUntilMs in the record, by the
//     store's (virtual) clock, and the "key expired, so SET NX wins" step is
//     a compare-and-set with WATCH/MULTI so exactly one claimer wins.
//   - Fail is a compare-and-set too (the pattern's compare-and-delete).
//   - The unit of work implements store.SplitTx: CommitEffect reads the
//     record and compares the token (GET + compare), then HSETNXes the
//     ledger entries; CommitMark reads and compares again, then writes the
//     processed record. No MULTI, no Lua around the two: that is the
//     pattern. A process that dies between them leaves an effect without
//     its mark, and the next holder applies the effect again (only the
//     ledger's HSETNX stops a second credit). The consumer commits a
//     SplitTx in two pipeline steps, so a scenario can crash right there.
//
// Each step's own check-then-write is not atomic against a concurrent
// takeover either; the deterministic runner never interleaves inside one
// call, so the finding it reports is the split between effect and mark.
//
// Time comes from the clock.Source the store is given (the runner's
// virtual true clock): same scenario, same trace.
package redisstore
