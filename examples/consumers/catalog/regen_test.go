package catalog_test

import (
	"testing"

	"github.com/idemcheck/idemcheck/examples/consumers/catalog"
	"github.com/idemcheck/idemcheck/internal/regen"
)

// TestRegenerateCorpus rewrites corpus/consumers (see package regen):
// IDEMCHECK_REGENERATE=1 go test ./examples/consumers/catalog -run TestRegenerateCorpus
func TestRegenerateCorpus(t *testing.T) {
	if !regen.Enabled(t) {
		return
	}
	regen.Cases(t, corpusDir, func(name string) (regen.Target, bool) {
		e, ok := catalog.Lookup(name)
		if !ok {
			return regen.Target{}, false
		}
		return regen.Target{Consumer: e.Consumer, Options: e.Options()}, true
	})
}
