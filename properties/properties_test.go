package properties_test

import (
	"testing"

	"github.com/idemcheck/idemcheck/impl/system"
	"github.com/idemcheck/idemcheck/properties"
)

// TestReferenceConformance: the reference implementations pass every
// property. A false alarm here is as bad as a missed bug.
func TestReferenceConformance(t *testing.T) {
	properties.Conformance(t, system.Reference(), properties.Options{Checks: 100})
}
