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
// but atomicity only when c has a Dedupe query, and the laws of a log
// broker only for a Log consumer (commit-after-apply with per-event
// effects, partition-order when it claims order), which is not judged by
// bounded-attempts.
func (c Consumer) Judged() []string {
	out := slices.Clone(Laws)
	if c.Dedupe == "" {
		out = slices.DeleteFunc(out, func(l string) bool { return l == LawAtomicity })
	}
	out = slices.DeleteFunc(out, func(l string) bool {
		switch {
		case c.Log == nil:
			return LogOnly(l)
		case l == LawBoundedAttempts, l == LawReplay:
			return true // a log has no retry policy, and no replay after the run
		case l == LawCommitAfterApply:
			return c.Effects.Aggregate
		case l == LawPartitionOrder:
			return !c.Log.Ordered
		}
		return false
	})
	return out
}
