// Package laws names what consumertest judges a team's consumer by: the
// laws a run may break (a Result's or a VerifyResult's Law, a Breach's),
// what each demands, and the situations a campaign should reach (a
// Result's Coverage). The names are the law registry's (package
// internal/law), the ones docs/invariants.md lists.
//
//	res, err := consumertest.Hunt(c)
//	if err == nil && res.Failed && res.Law == laws.SingleCredit {
//		fmt.Println(laws.Doc(res.Law))
//	}
package laws

import "github.com/idemcheck/idemcheck/internal/consumerharness"

// The laws, in no order (All is the order breaches are reported in).
const (
	// SingleCredit: no event's effect is applied twice (per consumer
	// group and event id).
	SingleCredit = consumerharness.LawSingleCredit
	// NothingLost: once the system is quiet, every healthy event has its
	// effect or sits in the dead-letter queue.
	NothingLost = consumerharness.LawNothingLost
	// HealthyApplied: a healthy event ends applied exactly once, judged
	// once quiet (before the replay); it may sit un-applied in the
	// dead-letter queue only when the harness's own faults spent the
	// attempts. A poison event is dead-lettered and never applied.
	HealthyApplied = consumerharness.LawHealthyApplied
	// Replay: replaying the whole stream leaves the effects of the events
	// already applied unchanged.
	Replay = consumerharness.LawReplay
	// BoundedAttempts: no message is delivered more than max_attempts
	// times, and every dead-letter entry carries its attempts, last error
	// and key.
	BoundedAttempts = consumerharness.LawBoundedAttempts
	// Atomicity: the dedupe records and the effects agree (effect and
	// mark land together); judged when Consumer.Dedupe is set.
	Atomicity = consumerharness.LawAtomicity
	// Runs: the handler can be run at all (no panic, no transaction left
	// open, no stray goroutine, no hang, the system quiesces).
	Runs = consumerharness.LawRuns
	// CommitAfterApply: on a log broker, a committed offset never runs
	// ahead of the effects (judged as each commit lands).
	CommitAfterApply = consumerharness.LawCommitAfterApply
	// PartitionOrder: on a log broker, a consumer that claims order
	// (LogConsumer.Ordered) applies each partition in offset order.
	PartitionOrder = consumerharness.LawPartitionOrder
)

// All lists every law, in the order breaches are reported.
var All = consumerharness.Laws

// Situations are the named situations a campaign over a transactional
// consumer should reach (kebab-case), the keys of a Result's Coverage: a
// run that never crashes a worker at a commit, say, proves nothing about
// commits.
var Situations = consumerharness.Situations

// LogSituations are the named situations a campaign over a consumer of a
// log broker (Consumer.Log) should reach, the keys of its Result's
// Coverage: the consumer-level ones a log reaches too and the log's own
// (a rebalance, a reset of the group's offsets). A log has no nack,
// redelivery, duplicate or dead-letter queue: those are not listed.
var LogSituations = consumerharness.LogSituations

// Breach is one law broken in one run. Its Diff is of what should be
// (-want) against what was done (+got).
type Breach = consumerharness.Breach

// Doc says in one line what law demands ("" for a name that is not one of
// All).
func Doc(law string) string { return consumerharness.LawDoc(law) }
