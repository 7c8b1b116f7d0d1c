// Package situation is the one registry of coverage situations: the named
// situations a run may reach, for the checks to mean anything. Every name
// is kebab-case and has one description. The runner's worlds (consumption
// and projection scenarios, counted by package properties/coverage and
// reported by fuzzrun) and the consumer-level world of package
// consumertest (a team's consumer over a database) all take their names
// from here.
package situation

import "github.com/idemcheck/idemcheck/faults/scenario"

// KindConsumer is the kind of the consumer-level situations: those a
// team's consumer reaches under package consumertest.
const KindConsumer scenario.Kind = "consumer"

// KindLog is the kind of the situations of a consumer of a log broker
// under package consumertest (Consumer.Log), besides the consumer-level
// ones a log run reaches too (see ForLog).
const KindLog scenario.Kind = "consumer-log"

// Situation is a named situation a run may reach.
type Situation struct {
	// Name is kebab-case and stable: reports and tests refer to it.
	Name string `json:"name"`
	// Kind is the kind of scenario that can reach it (KindConsumer for a
	// consumer-level one).
	Kind scenario.Kind `json:"kind"`
	// Doc says what counts as reaching it.
	Doc string `json:"doc"`
	// Optional situations are counted but a correct consumer may never
	// reach them: a campaign is not faulted for missing them.
	Optional bool `json:"optional,omitempty"`
}

// The runner's situations (consumption and projection scenarios).
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

// The consumer-level situations (package consumertest). A consumer
// redelivery after a nack or an ack timeout shares the runner's name: it
// means the same.
const (
	ConsumerCrashAtBegin     = "crash-at-begin"
	ConsumerCrashAtExec      = "crash-at-exec"
	ConsumerCrashAtQuery     = "crash-at-query"
	ConsumerCrashAtRowsEnd   = "crash-at-rows-end"
	ConsumerCrashAtCommit    = "crash-at-commit"
	ConsumerCrashAtSettle    = "crash-at-ack-or-nack"
	ConsumerCrashWhileIdle   = "crash-while-idle"
	ConsumerInjectedFailure  = "injected-failure"
	ConsumerLockWait         = "lock-wait"
	ConsumerNack             = "nack"
	ConsumerDuplicate        = "duplicate-delivered"
	ConsumerDeadLetterPoison = "dead-letter-poison"
	ConsumerDeadLetterSpent  = "dead-letter-attempts-spent"
	ConsumerCrashAtRollback  = "crash-at-rollback"
	ConsumerCrashAtPoint     = "crash-at-handler-point"
	ConsumerLockWaitGivenUp  = "lock-wait-given-up"
)

// The situations of a consumer of a log broker (ForLog).
const (
	LogRebalance        = "log-rebalance"
	LogCommitFenced     = "log-commit-fenced"
	LogZombieRolledBack = "log-zombie-rolled-back"
	LogCrashAtCommit    = "log-crash-at-commit"
	LogAutoCommit       = "log-auto-commit"
	LogReset            = "log-reset"
)

// queueOnly are the consumer-level situations of a queue broker's that a
// log never reaches: it has no nack, redelivery, duplicate or dead-letter
// queue.
var queueOnly = map[string]bool{ConsumerNack: true, RedeliveryAfterNack: true, RedeliveryAfterAckTimeout: true, ConsumerDuplicate: true,
	ConsumerDeadLetterPoison: true, ConsumerDeadLetterSpent: true}

// ForLog returns the situations a run of a log consumer counts, in report
// order: the consumer-level ones a log reaches too (crashes at the
// database's calls, injected failures, lock waits), then the log's own.
func ForLog() []Situation {
	var out []Situation
	for _, s := range ForKind(KindConsumer) {
		if !queueOnly[s.Name] {
			out = append(out, s)
		}
	}
	return append(out, ForKind(KindLog)...)
}

// RequiredLog returns the names of ForLog's situations that are not
// Optional, in report order.
func RequiredLog() []string {
	var out []string
	for _, s := range ForLog() {
		if !s.Optional {
			out = append(out, s.Name)
		}
	}
	return out
}

// The live situations: a campaign against a real broker (package
// properties, RunLiveCampaign). A delivery's outcome and a redelivery's
// cause are named by LiveDelivery and LiveRedeliveryAfter.
const (
	LiveRedelivery           = "redelivery"
	LiveProducerRetry        = "producer-retry"
	LiveProducerRetryDeduped = "producer-retry-deduped"
	LiveBrokerRestart        = "broker-restart"
	LiveDLQByBroker          = "dlq-by-broker"
	LiveDLQPoison            = "dlq-poison"
)

// liveOutcomes are the outcomes of a live delivery (runner.LiveOutcome),
// each with what it means.
var liveOutcomes = []struct{ name, doc string }{
	{"ack", "the consumer acked it"},
	{"nack", "the consumer nacked it"},
	{"dead-letter", "the consumer dead-lettered it"},
	{"crash", "the consumer crashed holding it (the connection closed without an ack)"},
	{"stall", "the consumer stalled past the ack timeout"},
	{"dropped", "the worker let go of it unsettled (a stale token after a takeover)"},
	{"ack-failed", "the ack did not reach the broker"},
}

// LiveDelivery is the live situation of a delivery whose outcome is
// outcome (runner.LiveOutcome): "delivery-crash".
func LiveDelivery(outcome string) string { return "delivery-" + outcome }

// LiveRedeliveryAfter is the live situation of a message the broker
// delivered again after a delivery whose outcome was outcome:
// "redelivery-after-crash".
func LiveRedeliveryAfter(outcome string) string { return "redelivery-after-" + outcome }

// live are the live situations, in report order.
func live() []Situation {
	var out []Situation
	for _, o := range liveOutcomes {
		out = append(out, Situation{LiveDelivery(o.name), scenario.KindLive, "a delivery ends so: " + o.doc, false})
	}
	out = append(out, Situation{LiveRedelivery, scenario.KindLive, "the broker delivers a message again (observed, not the broker's count)", false})
	for _, o := range liveOutcomes {
		out = append(out, Situation{LiveRedeliveryAfter(o.name), scenario.KindLive, "the broker delivers a message again after " + o.doc, true})
	}
	return append(out,
		Situation{LiveProducerRetry, scenario.KindLive, "the producer retries a publish", false},
		Situation{LiveProducerRetryDeduped, scenario.KindLive, "the broker deduplicates a producer's retried publish", true},
		Situation{LiveBrokerRestart, scenario.KindLive, "the broker restarts during the run", true},
		Situation{LiveDLQByBroker, scenario.KindLive, "the broker dead-letters a message itself (its delivery limit)", true},
		Situation{LiveDLQPoison, scenario.KindLive, "a poison message reaches the dead-letter queue", false},
	)
}

// registry is every situation, in report order: the runner's first (their
// index is their bit in a properties/coverage Set), then the consumer's.
var registry = []Situation{
	{TakeoverAfterLeaseExpiry, scenario.KindConsumption, "a worker claims a key whose holder's lease has expired while the holder still works on it", false},
	{StaleCommitRefused, scenario.KindConsumption, "a commit with a stale fencing token is refused", false},
	{CrashBeforeClaim, scenario.KindConsumption, "a worker crashes holding a delivery it has not claimed yet", false},
	{CrashAfterClaim, scenario.KindConsumption, "a worker crashes after winning a claim, before its handler runs", false},
	{CrashAfterHandle, scenario.KindConsumption, "a worker crashes after its handler ran, before the commit or the release", false},
	{CrashAfterCommit, scenario.KindConsumption, "a worker crashes after its commit, before the ack", false},
	{CrashAfterFail, scenario.KindConsumption, "a worker crashes after releasing a failed claim, before the nack", false},
	{CrashAfterDeadLetter, scenario.KindConsumption, "a worker crashes after publishing to the DLQ, before the ack", false},
	{RedeliveryAfterAckTimeout, scenario.KindConsumption, "a message is delivered again after its ack timeout passed", false},
	{RedeliveryAfterNack, scenario.KindConsumption, "a message is delivered again after a nack", false},
	{MaxAttemptsReached, scenario.KindConsumption, "a message is delivered for the max_attempts-th time", false},
	{PoisonToDLQ, scenario.KindConsumption, "a worker sends a poison message to the DLQ", false},
	{CleanupWhileRedeliveryPending, scenario.KindConsumption, "the retention job removes a key's record while a message of that key is still pending or in flight", false},
	{HLCClockStepBack, scenario.KindProjection, "an HLC reads its node's wall clock after the clock moved backwards", false},
	{ReplayRecoversDLQ, scenario.KindConsumption, "a replayed message of a dead-lettered event is committed", false},
	{Duplicate2To10, scenario.KindConsumption, "the broker duplicates a message (2 to 10 copies exist)", false},
	{ConcurrentClaims, scenario.KindConsumption, "a worker claims a key while another worker of its group holds a delivery of the same key", false},
	{TakeoverThenStaleRelease, scenario.KindConsumption, "a worker whose claim was taken over then releases it (its handler failed) with its stale token", false},
	{CleanupReclaimStaleCommit, scenario.KindConsumption, "a worker commits with a token issued before the retention job removed its key, after another worker claimed the key again", false},
	{HLCCounterPast16Bits, scenario.KindProjection, "a node's HLC stamps more than 65,536 local events within one instant (a burst): a 16-bit logical counter must carry into the wall", false},

	{ConsumerCrashAtBegin, KindConsumer, "a worker crashes as its handler begins a transaction", false},
	{ConsumerCrashAtExec, KindConsumer, "a worker crashes as its handler executes a statement", false},
	{ConsumerCrashAtQuery, KindConsumer, "a worker crashes as its handler runs a query", false},
	{ConsumerCrashAtRowsEnd, KindConsumer, "a worker crashes as its handler finishes reading a query's rows", false},
	{ConsumerCrashAtCommit, KindConsumer, "a worker crashes as its handler commits", false},
	{ConsumerCrashAtSettle, KindConsumer, "a worker crashes after its handler returned, before the ack or the nack", false},
	{ConsumerCrashWhileIdle, KindConsumer, "a worker crashes holding no delivery", false},
	{ConsumerInjectedFailure, KindConsumer, "a handler's database call fails by injection", false},
	{ConsumerLockWait, KindConsumer, "a handler meets a lock another worker holds: it waits, or the database answers busy at once (SQLite without a busy timeout)", false},
	{ConsumerNack, KindConsumer, "a worker nacks a delivery its handler failed", false},
	{RedeliveryAfterNack, KindConsumer, "a message is delivered again after a nack", false},
	{RedeliveryAfterAckTimeout, KindConsumer, "a message is delivered again after its ack timeout passed", false},
	{ConsumerDuplicate, KindConsumer, "the broker delivers a duplicate of a message", false},
	{ConsumerDeadLetterPoison, KindConsumer, "a poison message is dead-lettered", false},
	{ConsumerDeadLetterSpent, KindConsumer, "a message is dead-lettered after its attempts are spent", false},
	{ConsumerCrashAtRollback, KindConsumer, "a worker crashes as its handler rolls back (a handler may never roll back)", true},
	{ConsumerCrashAtPoint, KindConsumer, "a worker crashes at a handler.Point its handler marked (a handler may mark none)", true},
	{ConsumerLockWaitGivenUp, KindConsumer, "a lock wait is given up: a deadlock, or a lock a handler left held (a correct consumer may never meet one)", true},
	{LogRebalance, KindLog, "the consumer group rebalances: a partition is given to another worker", false},
	{LogCommitFenced, KindLog, "a worker's commit of an offset is fenced: a rebalance gave its partition to another (a consumer that never commits itself meets none)", true},
	{LogZombieRolledBack, KindLog, "a zombie (a worker whose partition a rebalance gave away while it held a batch) fails its Handle, its transaction rolled back (a consumer that does not fence its own writes meets none)", true},
	{LogCrashAtCommit, KindLog, "a worker crashes parked at its commit of an offset (a consumer that never commits itself meets none)", true},
	{LogAutoCommit, KindLog, "a worker's client commits automatically (a consumer without AutoCommit meets none)", true},
	{LogReset, KindLog, "the group's committed offsets are reset to the start and every partition assigned again", false},
}

func init() { registry = append(registry, live()...) }

// All returns every situation of every kind, in report order.
func All() []Situation { return append([]Situation(nil), registry...) }

// ForKind returns the situations of kind k, in report order.
func ForKind(k scenario.Kind) []Situation {
	var out []Situation
	for _, s := range registry {
		if s.Kind == k {
			out = append(out, s)
		}
	}
	return out
}

// Runner returns the situations of the runner's scenarios (consumption and
// projection), in report order.
func Runner() []Situation {
	var out []Situation
	for _, s := range registry {
		if s.Kind == scenario.KindConsumption || s.Kind == scenario.KindProjection {
			out = append(out, s)
		}
	}
	return out
}

// Required returns the names of kind k's situations that are not
// Optional, in report order.
func Required(k scenario.Kind) []string {
	var out []string
	for _, s := range ForKind(k) {
		if !s.Optional {
			out = append(out, s.Name)
		}
	}
	return out
}

// Lookup returns the situation of kind k named name.
func Lookup(k scenario.Kind, name string) (Situation, bool) {
	for _, s := range registry {
		if s.Kind == k && s.Name == name {
			return s, true
		}
	}
	return Situation{}, false
}
