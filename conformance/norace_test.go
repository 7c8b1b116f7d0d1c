//go:build !race

package conformance_test

// linearOps is the size of the recorded linearizability histories (see
// race_test.go).
const linearOps = 10_000
