// Package runner plays a Scenario against a Target on one goroutine, step by
// step, and returns what was observed. The same Scenario against the same
// Target always gives the same Outcome, byte for byte. The runner observes
// and records; it never judges: the properties (package properties) do,
// through Observers called after every action and from the final result.
package runner

import (
	"github.com/idemcheck/idemcheck/faults/scenario"
)

// Outcome is everything a run observed: the scenario, the trace, and the
// kind-specific result the properties judge.
type Outcome struct {
	Scenario *scenario.Scenario
	Target   string
	Trace    *Trace
	// Exactly one of these is set, matching the scenario's kind.
	Consumption *ConsumptionResult
	Projection  *ProjectionResult
}
