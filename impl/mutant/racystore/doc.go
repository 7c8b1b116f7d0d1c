// Package racystore holds mutant claim stores whose bugs only show under real
// concurrency or across a lease takeover: the bugs a sequential test of one
// worker never meets, and that the linearizability checker exists to catch.
//
// Each mutant is a realistic bug named after itself and implements the whole
// store.Store contract. The correct parts are a copy of the reference
// in-memory store's logic (see table.go), so that each mutant differs from
// the reference in its named bug only and a checker that flags it has caught
// that bug, not an unrelated difference.
//
// Mutants lists them for table-driven tests.
package racystore
