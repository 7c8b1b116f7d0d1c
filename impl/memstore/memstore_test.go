package memstore_test

import (
	"testing"

	"github.com/idemcheck/idemcheck/impl/clock"
	"github.com/idemcheck/idemcheck/impl/memstore"
	"github.com/idemcheck/idemcheck/impl/store"
	"github.com/idemcheck/idemcheck/impl/store/storetest"
)

// TestConformance runs the store contract's conformance suite against the
// in-memory reference store.
func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T, c clock.Source) store.Store { return memstore.New(c) })
}
