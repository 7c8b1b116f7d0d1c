// Package conformance holds the integration tests that run the harness
// against the real stores: the consumption invariants, through the runner's
// step-by-step schedules, and the linearizability check, with real
// goroutines and real connections, against SQLite, PostgreSQL and the
// example process adapter in examples/node-inbox.
//
// External services are named by environment variables; a test whose
// service is not configured skips with a message saying which variable to
// set (CI sets them all):
//
//	IDEMCHECK_POSTGRES_DSN  a PostgreSQL connection string
//	NODE_REQUIRED=1         fail, rather than skip, when node is not installed
//
// The package has no code of its own; it is a place for tests.
package conformance
