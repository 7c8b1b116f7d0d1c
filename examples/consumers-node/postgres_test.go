package consumersnode_test

import (
	"os"
	"testing"

	"github.com/idemcheck/idemcheck/consumertest"
)

// The same consumers, unchanged, on PostgreSQL: their SQL runs on both
// ($1 placeholders, portable types), and each delivery names its database
// (db.database in idemcheck.js) for SQL that would not.

// onPostgres is the option that plays the scenarios on the PostgreSQL at
// IDEMCHECK_POSTGRES_DSN, or skips.
func onPostgres(t *testing.T) consumertest.Option {
	t.Helper()
	dsn := os.Getenv(consumertest.PostgresEnv)
	if dsn == "" {
		t.Skipf("%s is not set: skipping the Node.js consumers on PostgreSQL", consumertest.PostgresEnv)
	}
	return consumertest.Postgres(dsn)
}

// TestPostgresCorrectNeverFlagged: insert-first.js passes the drawn
// scenarios on PostgreSQL too.
func TestPostgresCorrectNeverFlagged(t *testing.T) { correctNeverFlagged(t, onPostgres(t)) }

// TestPostgresBrokenShrunk: each saved counterexample breaks its law on
// PostgreSQL as it does on SQLite.
func TestPostgresBrokenShrunk(t *testing.T) { brokenShrunk(t, onPostgres(t)) }
