package consumersnode_test

import (
	"testing"

	"github.com/idemcheck/idemcheck/internal/regen"
)

// TestRegenerateCases rewrites testdata/consumertest (see package regen):
// IDEMCHECK_REGENERATE=1 go test ./examples/consumers-node -run TestRegenerateCases
func TestRegenerateCases(t *testing.T) {
	if !regen.Enabled(t) {
		return
	}
	regen.Cases(t, corpusDir, func(name string) (regen.Target, bool) {
		for _, b := range broken {
			if b.file == name+".js" {
				return regen.Target{Consumer: consumer(t, b.file)}, true
			}
		}
		return regen.Target{}, false
	})
}
