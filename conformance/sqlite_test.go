package conformance_test

import (
	"context"
	"testing"

	"github.com/idemcheck/idemcheck/faults/scenario"
	"github.com/idemcheck/idemcheck/impl/adapter/sqlitestore"
	"github.com/idemcheck/idemcheck/impl/contract/clock"
	"github.com/idemcheck/idemcheck/impl/contract/store"
	"github.com/idemcheck/idemcheck/linearizability"
)

// TestSQLiteInvariants: the reference consumer over SQLite keeps every
// consumption invariant, crashes (a closed connection under an open
// transaction) included.
func TestSQLiteInvariants(t *testing.T) {
	for _, spec := range []string{"sqlite", "sqlite-file"} {
		t.Run(spec, func(t *testing.T) {
			checks := 100
			if spec == "sqlite-file" {
				checks = 30 // the same SQL; this only proves the file path
			}
			huntClean(t, openTarget(t, spec), checks)
		})
	}
}

// TestSQLiteDeterministic: same scenario, same trace, over SQLite.
func TestSQLiteDeterministic(t *testing.T) {
	sameTraces(t, openTarget(t, "sqlite"), scenario.KindConsumption, 20)
}

// TestSQLiteLinearizable: the SQLite claim store under concurrent clients,
// each call on a connection of its own.
func TestSQLiteLinearizable(t *testing.T) {
	newStore := func(c clock.Source) store.Store {
		s, err := sqlitestore.Open(context.Background(), sqlitestore.Options{Clock: c})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	linearizability.CheckStore(t, newStore, linearizability.WithOps(linearOps), linearizability.WithSeed(seed))
}
