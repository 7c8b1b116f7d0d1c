package hunt

// Breach is one law broken in one run: what a judge of the property hunts
// (package properties) or of the consumer hunts (package consumertest)
// returns. Both packages name it Breach too.
type Breach struct {
	// Law is the law broken: a consumer law ("single-credit") or a
	// property's ("property/law").
	Law string `json:"law"`
	// Summary is one stable line (no pointers, no times of the machine) so
	// that rapid recognises two failures as the same by it.
	Summary string `json:"summary"`
	// Details explain the breach, a line each; "line N" refers to the trace.
	Details []string `json:"details,omitempty"`
	// Diff is a go-cmp diff of what should be (-want: the model, the
	// effects owed) against what was done (+got).
	Diff string `json:"diff,omitempty"`
}
