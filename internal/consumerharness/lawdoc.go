package consumerharness

import (
	"slices"

	"github.com/idemcheck/idemcheck/internal/law"
)

// LawDoc says in one line what law demands ("" for a name that is not one
// of Laws): the law registry's description (package internal/law), the
// one docs/invariants.md shows.
func LawDoc(name string) string {
	if !slices.Contains(Laws, name) {
		return ""
	}
	return law.Doc(name)
}

// Judged lists the laws c is judged by, in the order of Laws: all of them,
// but atomicity only when c has a Dedupe query.
func (c Consumer) Judged() []string {
	out := slices.Clone(Laws)
	if c.Dedupe == "" {
		out = slices.DeleteFunc(out, func(l string) bool { return l == LawAtomicity })
	}
	return out
}
