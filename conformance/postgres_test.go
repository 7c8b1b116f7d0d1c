package conformance_test

import (
	"testing"

	"github.com/idemcheck/idemcheck/faults/scenario"
	"github.com/idemcheck/idemcheck/impl/contract/clock"
	"github.com/idemcheck/idemcheck/impl/contract/store"
	"github.com/idemcheck/idemcheck/impl/system/resolve"
	"github.com/idemcheck/idemcheck/linearizability"
)

// TestPostgresInvariants: the reference consumer over PostgreSQL keeps every
// consumption invariant; each run has a schema of its own.
func TestPostgresInvariants(t *testing.T) {
	postgresDSN(t)
	huntClean(t, openTarget(t, "postgres"), 50)
}

// TestPostgresDeterministic: same scenario, same trace, over PostgreSQL.
func TestPostgresDeterministic(t *testing.T) {
	postgresDSN(t)
	sameTraces(t, openTarget(t, "postgres"), scenario.KindConsumption, 10)
}

// TestPostgresLinearizable: the PostgreSQL claim store under concurrent
// clients on connections of their own. The store is opened through the
// target, so it lives in a fresh schema that its Close drops.
func TestPostgresLinearizable(t *testing.T) {
	postgresDSN(t)
	tg := openTarget(t, "postgres")
	newStore := func(c clock.Source) store.Store {
		s, err := tg.Consumption.NewStore(c)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	linearizability.CheckStore(t, newStore, linearizability.WithOps(linearOps), linearizability.WithSeed(seed))
}

// TestResolvePostgresUnset: without a DSN the target is refused with a
// message that says what to set.
func TestResolvePostgresUnset(t *testing.T) {
	t.Setenv(resolve.PostgresDSNEnv, "")
	_, err := resolve.Resolve("postgres")
	if err == nil {
		t.Fatal("Resolve(postgres) succeeded without a DSN")
	}
	t.Log(err)
}
