//go:build race

package linearizability

// testOps is the size of the recorded histories in tests. The race detector
// slows the recording several times over, so it gets smaller histories; the
// run without it keeps the 10,000 operations the reference must pass with.
const testOps = 2_000
