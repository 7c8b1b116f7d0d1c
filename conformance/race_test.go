//go:build race

package conformance_test

// linearOps is the size of the recorded linearizability histories. The
// race detector slows the clients several times over, so it gets smaller
// ones.
const linearOps = 2_000
