// Package linearizability checks that a claim store (impl/store.Store) is
// linearizable: that every history of concurrent operations against it could
// have come from its sequential specification, one operation at a time, each
// taking effect between its call and its return.
//
// It has four parts:
//
//   - Model: a porcupine model of the store's sequential specification
//     (claim, commit with a token, fail, read, and lease expiry decided by the
//     store time each claim reports), partitioned by key so that checking
//     grows with the number of keys and not with their product.
//   - Record: drives any store.Store from N goroutines of real concurrent
//     operations over a shared virtual clock, and records each call and return
//     stamped from one monotonic counter. An operation that errs or times out
//     is recorded as ambiguous: it may or may not have taken effect, it never
//     returned, and any output is accepted for it.
//   - Check: the partitioned check under a timeout, with three distinct
//     verdicts: Linearizable, Violation, and Unknown (the timeout struck first).
//     Unknown is never a pass.
//   - WriteVisualization: porcupine's HTML page of the violating keys'
//     histories, annotated with the operations that cannot be linearized.
//
// CheckStore puts the four together for another implementation's test, in one
// call, the way the conformance suite is used.
//
// Interleavings here come from the Go scheduler, not from a seed: real
// goroutines are for linearizability stress only: every other check of the
// project plays on one goroutine, deterministically. Everything else
// (the operations each worker issues, its clock steps, the keys) is drawn
// from a seeded generator.
package linearizability
