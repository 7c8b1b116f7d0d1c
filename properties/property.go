// Package properties holds the project's invariants (listed with their laws
// in docs/invariants.md and by `fuzzrun list`) as named checks. Each
// property is made of laws; each law is judged on every run, as the run
// happens (a Monitor, an observer called after every action: rapid's
// state-machine idea of a check after each action) and from the final
// result, and a broken law is reported on its own, with the trace lines it
// points at and a go-cmp diff of the model against the implementation.
package properties

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/idemcheck/idemcheck/faults/runner"
	"github.com/idemcheck/idemcheck/faults/scenario"
	"github.com/idemcheck/idemcheck/internal/hunt"
	"github.com/idemcheck/idemcheck/internal/law"
)

// Law is one named rule a property is made of. Laws are judged and reported
// separately: a run that breaks two laws shows both.
type Law struct {
	Name string
	Doc  string
}

// lawsOf returns the laws of property p as the registry (package
// internal/law) lists them: their names and descriptions live there alone.
func lawsOf(p string) []Law {
	var out []Law
	for _, l := range law.Of(p) {
		out = append(out, Law{Name: l.ID, Doc: l.Doc})
	}
	return out
}

// Breach is one law broken in one run. Its Diff is of what should be
// (-want) against what was done (+got).
type Breach = hunt.Breach

// Verdict is the judgement of one property on one run.
type Verdict struct {
	Property string `json:"property"`
	Pass     bool   `json:"pass"`
	// Law is the first law broken ("" when the property passed).
	Law string `json:"law,omitempty"`
	// Summary is one stable line: the first breach's, or what passed.
	Summary string `json:"summary"`
	// Details explain the verdict, a line each: every breach's details,
	// each prefixed by its law.
	Details []string `json:"details,omitempty"`
	// Diff is the first breach's diff of the model (-want) against the
	// implementation (+got).
	Diff string `json:"diff,omitempty"`
	// Breaches are the broken laws, in the order of the property's laws.
	Breaches []Breach `json:"breaches,omitempty"`
	// Off lists the laws switched off for this run, with the reason given.
	Off map[string]string `json:"off,omitempty"`
}

// ID names a law of a property for -property, Off and reports: "property/law".
func ID(property, law string) string { return property + "/" + law }

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
	for _, law := range slices.Sorted(maps.Keys(v.Off)) {
		fmt.Fprintf(&b, "  - law %s switched off: %s\n", law, v.Off[law])
	}
	if v.Diff != "" {
		fmt.Fprintf(&b, "  model (-want) vs implementation (+got):\n%s", indent(v.Diff, "    "))
	}
	return b.String()
}

// indent is hunt.Indent.
func indent(s, prefix string) string { return hunt.Indent(s, prefix) }

// Monitor judges a run as it happens: the runner shows it every action and
// the world after it. A property's monitor keeps what it needs of the
// history (tokens issued, deliveries counted, records cleaned up) and notes
// every breach at the action where it happened.
type Monitor interface {
	runner.Observer
	// Breaches returns what the monitor has seen broken so far.
	Breaches() []Breach
}

// Property is one named invariant.
type Property struct {
	// Name is the stable identifier used by -property, corpus files and tests.
	Name string
	// Invariant is the invariant's number in the project's numbered list
	// (docs/invariants.md; linearizability, checked apart, is 11).
	Invariant int
	// Kind is the kind of scenario the property judges.
	Kind scenario.Kind
	// Doc says in one sentence what must hold.
	Doc string
	// Laws are the rules the property is made of.
	Laws []Law
	// Pass is the verdict's summary when no law is broken.
	Pass func(o *runner.Outcome, m Monitor) string
	// Notes, if set, adds details to a passing verdict: what was seen that
	// no law forbids (a known-bad baseline failing, say).
	Notes func(o *runner.Outcome) []string
	// Monitor returns a fresh monitor for one run (nil: the property judges
	// the final result only).
	Monitor func() Monitor
	// Final judges the finished run, with what the monitor saw (nil if the
	// property has none), and returns the breaches the monitor could not
	// see.
	Final func(o *runner.Outcome, m Monitor) []Breach
}

// HasLaw reports whether p has a law named law.
func (p Property) HasLaw(law string) bool {
	return slices.ContainsFunc(p.Laws, func(l Law) bool { return l.Name == law })
}

// verdict assembles the verdict of p from its breaches, leaving out the
// laws switched off.
func (p Property) verdict(o *runner.Outcome, m Monitor, breaches []Breach, off map[string]string, summarise bool) Verdict {
	v := Verdict{Property: p.Name}
	for _, law := range p.Laws {
		if len(off) == 0 {
			break // no law is off: nothing to look up
		}
		if r, ok := off[ID(p.Name, law.Name)]; ok {
			if v.Off == nil {
				v.Off = map[string]string{}
			}
			v.Off[law.Name] = r
		}
	}
	for _, law := range p.Laws {
		if _, ok := v.Off[law.Name]; ok {
			continue
		}
		for _, b := range breaches {
			if b.Law != law.Name {
				continue
			}
			v.Breaches = append(v.Breaches, b)
			for _, d := range b.Details {
				v.Details = append(v.Details, law.Name+": "+d)
			}
			if len(b.Details) == 0 {
				v.Details = append(v.Details, law.Name+": "+b.Summary)
			}
		}
	}
	for _, b := range breaches {
		// A law registered after the property was (law.Register, with its
		// judge function in package internal/history) is reported after
		// the property's own, in the order judged.
		if p.HasLaw(b.Law) {
			continue
		}
		if r, ok := off[ID(p.Name, b.Law)]; ok {
			if v.Off == nil {
				v.Off = map[string]string{}
			}
			v.Off[b.Law] = r
			continue
		}
		v.Breaches = append(v.Breaches, b)
		for _, d := range b.Details {
			v.Details = append(v.Details, b.Law+": "+d)
		}
	}
	if len(v.Breaches) == 0 {
		v.Pass = true
		if summarise {
			v.Summary = p.Pass(o, m)
			if p.Notes != nil {
				v.Details = p.Notes(o)
			}
		}
		return v
	}
	first := v.Breaches[0]
	v.Law, v.Summary, v.Diff = first.Law, first.Summary, first.Diff
	for _, b := range v.Breaches[1:] {
		if v.Diff == "" {
			v.Diff = b.Diff
		}
	}
	return v
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
	if len(p.Laws) == 0 || p.Pass == nil || (p.Monitor == nil && p.Final == nil) {
		panic("properties: property " + p.Name + " needs laws, a pass summary, and a monitor or a final check")
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

// LawIDs lists every law of props as "property/law".
func LawIDs(props []Property) []string {
	var out []string
	for _, p := range props {
		for _, l := range p.Laws {
			out = append(out, ID(p.Name, l.Name))
		}
	}
	return out
}

// breach is a Breach of law with a summary and details.
func breach(law, summary string, details ...string) Breach {
	return Breach{Law: law, Summary: summary, Details: details}
}

// lineOf is the "line N: " prefix of a detail that points at a trace line.
func lineOf(n int) string { return fmt.Sprintf("line %d: ", n) }
