package conformance_test

import (
	"context"
	"testing"

	"github.com/idemcheck/idemcheck/faults/scenario"
	"github.com/idemcheck/idemcheck/impl/adapter/procstore"
	"github.com/idemcheck/idemcheck/impl/contract/clock"
	"github.com/idemcheck/idemcheck/impl/contract/store"
	"github.com/idemcheck/idemcheck/impl/contract/store/storetest"
	"github.com/idemcheck/idemcheck/linearizability"
)

// TestNodeInvariants: the example Node.js implementation, driven through
// the process adapter, keeps every consumption invariant. A worker's crash
// kills the node process, which restarts over its state file.
func TestNodeInvariants(t *testing.T) {
	huntClean(t, openTarget(t, "exec:"+nodeCommand(t)), 50)
}

// TestNodeDeterministic: same scenario, same trace, through a process.
func TestNodeDeterministic(t *testing.T) {
	sameTraces(t, openTarget(t, "exec:"+nodeCommand(t)), scenario.KindConsumption, 5)
}

// openNode opens the example adapter over c; the test closes it.
func openNode(t testing.TB, command string, c clock.Source) *procstore.Store {
	t.Helper()
	argv, err := procstore.ParseCommand(command)
	if err != nil {
		t.Fatal(err)
	}
	s, err := procstore.Open(context.Background(), procstore.Options{Command: argv}, c)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestNodeContract: the store contract's own suite, rule by rule.
func TestNodeContract(t *testing.T) {
	command := nodeCommand(t)
	storetest.Run(t, func(t *testing.T, c clock.Source) store.Store {
		s := openNode(t, command, c)
		t.Cleanup(func() { s.Close() })
		return s
	})
}

// TestNodeLinearizable: concurrent clients through the adapter. The adapter
// serialises requests, so this proves the implementation's sequential
// behaviour is the specification's, under every interleaving of clients.
func TestNodeLinearizable(t *testing.T) {
	command := nodeCommand(t)
	newStore := func(c clock.Source) store.Store { return openNode(t, command, c) }
	linearizability.CheckStore(t, newStore, linearizability.WithOps(linearOps/5), linearizability.WithSeed(seed))
}

// TestNodeDurableAndReset: what the example committed survives a restart
// of its process (the state file), an open unit of work does not, and reset
// empties the store.
func TestNodeDurableAndReset(t *testing.T) {
	ctx := context.Background()
	s := openNode(t, nodeCommand(t), clock.NewVirtual(1000))
	defer s.Close()
	k := store.Key{Tenant: "acme", Consumer: "ledger", ID: "evt-1"}
	c, err := s.Claim(ctx, k, 100)
	if err != nil {
		t.Fatal(err)
	}
	tx, err := s.Begin(ctx, k, c.Token)
	if err != nil {
		t.Fatal(err)
	}
	tx.Credit(store.Entry{Consumer: "ledger", EventID: "evt-1", OrderID: "o", UserID: "u", AmountCents: 5})
	s.Restart()
	if _, err := tx.Commit(ctx); err == nil {
		t.Error("a unit of work survived the restart of its process")
	}
	r, ok, err := s.Get(ctx, k)
	if err != nil || !ok || r.State != store.Processing || r.Token != c.Token {
		t.Fatalf("record after the restart: %+v %v %v, want the claim kept", r, ok, err)
	}
	if l, err := s.Ledger(ctx); err != nil || len(l) != 0 {
		t.Errorf("ledger %+v %v: the lost unit must land nothing", l, err)
	}
	if err := s.Reset(ctx); err != nil {
		t.Fatal(err)
	}
	if recs, err := s.Records(ctx); err != nil || len(recs) != 0 {
		t.Errorf("records after reset: %+v %v", recs, err)
	}
}
