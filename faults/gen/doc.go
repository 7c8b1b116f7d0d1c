// Package gen holds the rapid generators of Scenarios: the adversary's
// vocabulary drawn as values, so that every failure rapid finds shrinks to a
// minimal schedule. Generators only draw plain data; nothing here runs it.
package gen

import (
	"pgregory.net/rapid"

	"github.com/idemcheck/idemcheck/faults/scenario"
)

// ForKind returns the generator of scenarios of kind k.
func ForKind(k scenario.Kind) *rapid.Generator[*scenario.Scenario] {
	if k == scenario.KindProjection {
		return Projection()
	}
	return Consumption()
}
