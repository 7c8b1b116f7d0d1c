package conformance_test

import (
	"context"
	"testing"

	"github.com/idemcheck/idemcheck/impl/clock"
	"github.com/idemcheck/idemcheck/impl/procstore"
	"github.com/idemcheck/idemcheck/impl/store"
	"github.com/idemcheck/idemcheck/impl/store/storetest"
	"github.com/idemcheck/idemcheck/linearizability"
)

// TestNodeInvariants: the example Node.js implementation, driven through
// the process adapter, keeps every consumption invariant. A worker's crash
// kills the node process, which restarts over its state file.
func TestNodeInvariants(t *testing.T) {
	huntClean(t, resolve(t, "exec:"+nodeCommand(t)), 50)
}

// TestNodeDeterministic: same scenario, same trace, through a process.
func TestNodeDeterministic(t *testing.T) {
	sameTraces(t, resolve(t, "exec:"+nodeCommand(t)), 5)
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
