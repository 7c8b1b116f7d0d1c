//go:build !race

package conformance_test

// See race_test.go.
const (
	linearOps = 10_000
	slowdown  = 1
)
