package memstore_test

import (
	"testing"

	"github.com/idemcheck/idemcheck/impl/contract/clock"
	"github.com/idemcheck/idemcheck/impl/contract/store"
	"github.com/idemcheck/idemcheck/impl/contract/store/storetest"
	"github.com/idemcheck/idemcheck/impl/reference/memstore"
)

// TestConformance runs the store contract's conformance suite against the
// in-memory reference store.
func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T, c clock.Source) store.Store { return memstore.New(c) })
}
