//go:build race

package conformance_test

// The race detector slows everything several times over (modernc's SQLite,
// transpiled C, the most), so under it the tests draw fewer scenarios and
// record smaller histories, to stay within their time budget.
const (
	// linearOps is the size of the recorded linearizability histories.
	linearOps = 2_000
	// slowdown divides the number of scenarios each test draws.
	slowdown = 3
)
