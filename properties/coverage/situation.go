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
// campaigns and Conformance fail on them once they have run MinChecks
// scenarios or more.
//
// The package judges nothing and imports no property: the explorer and any
// other driver of the runner can use it as it is (see Tracker).
package coverage

import "github.com/idemcheck/idemcheck/faults/scenario"

// Situation is a named situation a run may reach.
type Situation struct {
	// Name is kebab-case and stable: reports and tests refer to it.
	Name string `json:"name"`
	// Kind is the kind of scenario that can reach it.
	Kind scenario.Kind `json:"kind"`
	// Doc says what counts as reaching it.
	Doc string `json:"doc"`
}

// The situations' names.
const (
	TakeoverAfterLeaseExpiry      = "takeover-after-lease-expiry"
	StaleCommitRefused            = "stale-commit-refused"
	CrashBeforeClaim              = "crash-before-claim"
	CrashAfterClaim               = "crash-after-claim"
	CrashAfterHandle              = "crash-after-handle"
	CrashAfterCommit              = "crash-after-commit"
	CrashAfterFail                = "crash-after-fail"
	CrashAfterDeadLetter          = "crash-after-dead-letter"
	RedeliveryAfterAckTimeout     = "redelivery-after-ack-timeout"
	RedeliveryAfterNack           = "redelivery-after-nack"
	MaxAttemptsReached            = "max-attempts-reached"
	PoisonToDLQ                   = "poison-to-dlq"
	CleanupWhileRedeliveryPending = "cleanup-while-redelivery-pending"
	HLCClockStepBack              = "hlc-clock-step-back"
	ReplayRecoversDLQ             = "replay-recovers-dlq"
	Duplicate2To10                = "duplicate-2-to-10"
	ConcurrentClaims              = "concurrent-claims-one-key"
	TakeoverThenStaleRelease      = "takeover-then-stale-release"
	CleanupReclaimStaleCommit     = "cleanup-reclaim-stale-commit"
	HLCCounterPast16Bits          = "hlc-counter-past-16-bits"
)

// situations is the registry, in the order reports list it. Its index is
// a situation's bit in a Set.
var situations = []Situation{
	{TakeoverAfterLeaseExpiry, scenario.KindConsumption, "a worker claims a key whose holder's lease has expired while the holder still works on it"},
	{StaleCommitRefused, scenario.KindConsumption, "a commit with a stale fencing token is refused"},
	{CrashBeforeClaim, scenario.KindConsumption, "a worker crashes holding a delivery it has not claimed yet"},
	{CrashAfterClaim, scenario.KindConsumption, "a worker crashes after winning a claim, before its handler runs"},
	{CrashAfterHandle, scenario.KindConsumption, "a worker crashes after its handler ran, before the commit or the release"},
	{CrashAfterCommit, scenario.KindConsumption, "a worker crashes after its commit, before the ack"},
	{CrashAfterFail, scenario.KindConsumption, "a worker crashes after releasing a failed claim, before the nack"},
	{CrashAfterDeadLetter, scenario.KindConsumption, "a worker crashes after publishing to the DLQ, before the ack"},
	{RedeliveryAfterAckTimeout, scenario.KindConsumption, "a message is delivered again after its ack timeout passed"},
	{RedeliveryAfterNack, scenario.KindConsumption, "a message is delivered again after a nack"},
	{MaxAttemptsReached, scenario.KindConsumption, "a message is delivered for the max_attempts-th time"},
	{PoisonToDLQ, scenario.KindConsumption, "a worker sends a poison message to the DLQ"},
	{CleanupWhileRedeliveryPending, scenario.KindConsumption, "the retention job removes a key's record while a message of that key is still pending or in flight"},
	{HLCClockStepBack, scenario.KindProjection, "an HLC reads its node's wall clock after the clock moved backwards"},
	{ReplayRecoversDLQ, scenario.KindConsumption, "a replayed message of a dead-lettered event is committed"},
	{Duplicate2To10, scenario.KindConsumption, "the broker duplicates a message (2 to 10 copies exist)"},
	{ConcurrentClaims, scenario.KindConsumption, "a worker claims a key while another worker of its group holds a delivery of the same key"},
	{TakeoverThenStaleRelease, scenario.KindConsumption, "a worker whose claim was taken over then releases it (its handler failed) with its stale token"},
	{CleanupReclaimStaleCommit, scenario.KindConsumption, "a worker commits with a token issued before the retention job removed its key, after another worker claimed the key again"},
	{HLCCounterPast16Bits, scenario.KindProjection, "a node's HLC stamps more than 65,536 local events within one instant (a burst): a 16-bit logical counter must carry into the wall"},
}

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

// ForKind returns the situations scenarios of kind k can reach.
func ForKind(k scenario.Kind) []Situation {
	var out []Situation
	for _, s := range situations {
		if s.Kind == k {
			out = append(out, s)
		}
	}
	return out
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
