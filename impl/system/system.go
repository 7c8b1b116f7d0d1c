// Package system assembles complete systems under test — Targets — from the
// parts in impl/: the reference implementations and every mutant. A mutant is
// the reference with one realistic bug swapped in, and names the property
// that must catch it.
package system

import (
	"cmp"
	"slices"
	"sync"
)

// Target is a complete system under test.
type Target struct {
	// Name identifies the target ("reference", or the mutant's name).
	Name string
	// Mutant is true for a deliberately broken target.
	Mutant bool
	// Bug describes a mutant's bug in one sentence.
	Bug string
	// KilledBy names the property that must catch a mutant.
	KilledBy string
	// Consumption builds the parts of a consumption run; nil if the target
	// does not take part in consumption scenarios.
	Consumption *Consumption
	// Projection builds the parts of a projection run; nil if the target does
	// not take part in projection scenarios.
	Projection *Projection
}

var (
	mu      sync.Mutex
	targets []Target
)

func register(t Target) {
	mu.Lock()
	defer mu.Unlock()
	for _, o := range targets {
		if o.Name == t.Name {
			panic("system: duplicate target " + t.Name)
		}
	}
	targets = append(targets, t)
}

// Reference returns the reference target: every part correct.
func Reference() Target {
	return Target{Name: "reference", Consumption: referenceConsumption(), Projection: referenceProjection()}
}

// Mutants returns every registered mutant, sorted by name.
func Mutants() []Target {
	mu.Lock()
	defer mu.Unlock()
	out := slices.Clone(targets)
	slices.SortFunc(out, func(a, b Target) int { return cmp.Compare(a.Name, b.Name) })
	return out
}

// Lookup returns the reference or the named mutant.
func Lookup(name string) (Target, bool) {
	if name == "reference" {
		return Reference(), true
	}
	for _, t := range Mutants() {
		if t.Name == name {
			return t, true
		}
	}
	return Target{}, false
}
