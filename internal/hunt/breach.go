package hunt

import "strings"

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

// Indent prefixes every line of s (a diff, a report) with prefix and ends
// it with a newline: how the hunts' reports nest a breach's diff.
func Indent(s, prefix string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i, l := range lines {
		lines[i] = prefix + l
	}
	return strings.Join(lines, "\n") + "\n"
}
