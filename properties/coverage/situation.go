// Package coverage names the situations a run must reach for the checks to
// mean anything — "sometimes" properties, next to the "always" properties of
// package properties — and counts how often runs reach each.
//
// A clean campaign proves nothing about a fault its scenarios never drew: a
// fencing check that never saw a takeover cannot have caught a store whose
// stale release frees the new holder's claim. The Observer watches runs
// through the runner's observer hook (runner.Observer) and records, per run,
// which situations happened; Counts add up over runs and merge across
// parallel workers. Missing names the situations a campaign never reached:
// campaigns and Conformance fail on them once they have run a count of
// MinChecks scenarios or more fixed in advance (never a time budget's).
//
// The package judges nothing and imports no property: the explorer and any
// other driver of the runner can use it as it is (see Tracker).
package coverage

import (
	"github.com/idemcheck/idemcheck/faults/scenario"
	"github.com/idemcheck/idemcheck/internal/situation"
)

// Situation is a named situation a run may reach (situation.Situation:
// the one registry of situation names).
type Situation = situation.Situation

// The situations' names, from the one registry.
const (
	TakeoverAfterLeaseExpiry      = situation.TakeoverAfterLeaseExpiry
	StaleCommitRefused            = situation.StaleCommitRefused
	CrashBeforeClaim              = situation.CrashBeforeClaim
	CrashAfterClaim               = situation.CrashAfterClaim
	CrashAfterHandle              = situation.CrashAfterHandle
	CrashAfterCommit              = situation.CrashAfterCommit
	CrashAfterFail                = situation.CrashAfterFail
	CrashAfterDeadLetter          = situation.CrashAfterDeadLetter
	RedeliveryAfterAckTimeout     = situation.RedeliveryAfterAckTimeout
	RedeliveryAfterNack           = situation.RedeliveryAfterNack
	MaxAttemptsReached            = situation.MaxAttemptsReached
	PoisonToDLQ                   = situation.PoisonToDLQ
	CleanupWhileRedeliveryPending = situation.CleanupWhileRedeliveryPending
	HLCClockStepBack              = situation.HLCClockStepBack
	ReplayRecoversDLQ             = situation.ReplayRecoversDLQ
	Duplicate2To10                = situation.Duplicate2To10
	ConcurrentClaims              = situation.ConcurrentClaims
	TakeoverThenStaleRelease      = situation.TakeoverThenStaleRelease
	CleanupReclaimStaleCommit     = situation.CleanupReclaimStaleCommit
	HLCCounterPast16Bits          = situation.HLCCounterPast16Bits
)

// situations are the runner's situations, in the order reports list
// them. Its index is a situation's bit in a Set.
var situations = situation.Runner()

// index maps a name to its bit.
var index = func() map[string]int {
	m := make(map[string]int, len(situations))
	for i, s := range situations {
		m[s.Name] = i
	}
	return m
}()

// All returns every situation, in report order.
func All() []Situation { return append([]Situation(nil), situations...) }

// ForKind returns the situations scenarios of kind k can reach (none for
// a kind the runner does not play).
func ForKind(k scenario.Kind) []Situation {
	if k == situation.KindConsumer {
		return nil
	}
	return situation.ForKind(k)
}

// Lookup returns the situation named name.
func Lookup(name string) (Situation, bool) {
	i, ok := index[name]
	if !ok {
		return Situation{}, false
	}
	return situations[i], true
}

// Set is a set of situations reached, one bit each.
type Set uint64

// With returns s with the situation named name; an unknown name is a bug
// of the caller and panics.
func (s Set) With(name string) Set {
	i, ok := index[name]
	if !ok {
		panic("coverage: unknown situation " + name)
	}
	return s | 1<<i
}

// Has reports whether s holds the situation named name.
func (s Set) Has(name string) bool {
	i, ok := index[name]
	return ok && s&(1<<i) != 0
}

// Names lists the situations of s in report order.
func (s Set) Names() []string {
	var out []string
	for i, sit := range situations {
		if s&(1<<i) != 0 {
			out = append(out, sit.Name)
		}
	}
	return out
}
