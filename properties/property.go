// Package properties holds the invariants of SPEC.md as named checks. Each
// check is a pure function from a run's Outcome (the scenario, the trace and
// the final state) to a Verdict that explains itself.
package properties

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/idemcheck/idemcheck/faults/runner"
	"github.com/idemcheck/idemcheck/faults/scenario"
)

// Verdict is the judgement of one property on one run.
type Verdict struct {
	Property string `json:"property"`
	Pass     bool   `json:"pass"`
	// Summary is one stable line (no pointers, no times of the machine) so
	// that rapid recognises two failures as the same.
	Summary string `json:"summary"`
	// Details explain the verdict, a line each.
	Details []string `json:"details,omitempty"`
	// Diff is a go-cmp diff of the model (-want) against the implementation (+got).
	Diff string `json:"diff,omitempty"`
}

// String renders the verdict for a person.
func (v Verdict) String() string {
	var b strings.Builder
	status := "PASS"
	if !v.Pass {
		status = "FAIL"
	}
	fmt.Fprintf(&b, "%s %s: %s\n", status, v.Property, v.Summary)
	for _, d := range v.Details {
		fmt.Fprintf(&b, "  - %s\n", d)
	}
	if v.Diff != "" {
		fmt.Fprintf(&b, "  model (-want) vs implementation (+got):\n%s", indent(v.Diff, "    "))
	}
	return b.String()
}

func indent(s, prefix string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i, l := range lines {
		lines[i] = prefix + l
	}
	return strings.Join(lines, "\n") + "\n"
}

// Property is one named invariant.
type Property struct {
	// Name is the stable identifier used by -property, corpus files and tests.
	Name string
	// Invariant is the number of the invariant in SPEC.md.
	Invariant int
	// Kind is the kind of scenario the property judges.
	Kind scenario.Kind
	// Doc says in one sentence what must hold.
	Doc string
	// Check judges one run.
	Check func(*runner.Outcome) Verdict
}

var (
	regMu    sync.Mutex
	registry []Property
)

// register adds a property; called from init functions.
func register(p Property) {
	regMu.Lock()
	defer regMu.Unlock()
	for _, q := range registry {
		if q.Name == p.Name {
			panic("properties: duplicate property " + p.Name)
		}
	}
	registry = append(registry, p)
}

// All returns every property, ordered by invariant number then name.
func All() []Property {
	regMu.Lock()
	defer regMu.Unlock()
	out := slices.Clone(registry)
	slices.SortFunc(out, func(a, b Property) int {
		return cmp.Or(cmp.Compare(a.Invariant, b.Invariant), cmp.Compare(a.Name, b.Name))
	})
	return out
}

// ByName returns the named property.
func ByName(name string) (Property, bool) {
	for _, p := range All() {
		if p.Name == name {
			return p, true
		}
	}
	return Property{}, false
}

// ForKind returns the properties that judge scenarios of kind k.
func ForKind(k scenario.Kind) []Property {
	var out []Property
	for _, p := range All() {
		if p.Kind == k {
			out = append(out, p)
		}
	}
	return out
}

func pass(name, summary string) Verdict { return Verdict{Property: name, Pass: true, Summary: summary} }

func fail(name, summary string, details ...string) Verdict {
	return Verdict{Property: name, Summary: summary, Details: details}
}
