//go:build !race

package linearizability

// testOps is the size of the recorded histories in tests (see race_test.go).
const testOps = 10_000
