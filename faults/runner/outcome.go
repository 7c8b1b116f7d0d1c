// Package runner plays a Scenario against a Target on one goroutine, step by
// step, and returns what was observed. The same Scenario against the same
// Target always gives the same Outcome, byte for byte.
package runner

import (
	"fmt"
	"strings"

	"github.com/idemcheck/idemcheck/faults/scenario"
)

// Outcome is everything a run observed: the scenario, the human trace, and the
// kind-specific result the properties judge.
type Outcome struct {
	Scenario *scenario.Scenario
	Target   string
	Trace    Trace
	// Exactly one of these is set, matching the scenario's kind.
	Consumption *ConsumptionResult
	Projection  *ProjectionResult
}

// Trace is the numbered, human-readable account of a run.
type Trace struct {
	Lines []string
}

// Addf appends one line.
func (t *Trace) Addf(format string, args ...any) {
	t.Lines = append(t.Lines, fmt.Sprintf(format, args...))
}

// String renders the trace as numbered lines.
func (t Trace) String() string {
	var b strings.Builder
	width := len(fmt.Sprint(len(t.Lines)))
	for i, l := range t.Lines {
		fmt.Fprintf(&b, "%*d. %s\n", width, i+1, l)
	}
	return b.String()
}
