// Package scenario is consumertest's scenario vocabulary, for a team
// that crafts, saves or reads the scenarios its consumer is run through
// rather than letting Check draw them: the scenario itself (the events,
// the workers, the broker's retry policy, the explicit schedule of
// steps), the fates of a verification's events, the generators of
// property-based testing and fuzzing, and what a run's Outcome holds
// (the trace, its lines as data, the deliveries and the end state).
//
//	s, err := scenario.Load("testdata/consumertest/ledger-single-credit-654a4053153b.json")
//	if err != nil {
//		t.Fatal(err)
//	}
//	res, err := consumertest.Replay(c, s)
//
// Every type here is the harness's own under the front door's path (an
// alias), so that a scenario loaded here is the one consumertest.Replay
// takes and a Result's Scenario and Outcome are of these types.
package scenario

import (
	"pgregory.net/rapid"

	"github.com/idemcheck/idemcheck/faults/gen"
	"github.com/idemcheck/idemcheck/internal/consumerharness"
)

// Version is the version of the Scenario's JSON form.
const Version = consumerharness.ScenarioVersion

// Scenario is one run of a team's consumer, as plain data: the events
// produced, the workers of the consumer group, the broker's retry policy
// and the explicit schedule of steps. Nothing about a run comes from
// outside its Scenario: the same Scenario gives the same Trace. After the
// steps the harness drains the system with a fixed schedule until it is
// quiet, judges it, replays the whole stream, drains and judges again.
type Scenario = consumerharness.Scenario

// Event is one OrderPaid event the producer publishes at the start.
type Event = consumerharness.Event

// Step is one entry of the schedule.
type Step = consumerharness.Step

// StepOp names what a step does.
type StepOp = consumerharness.StepOp

// The steps of a schedule: the consumer's words of the one scenario
// vocabulary both worlds share (faults/scenario.Vocabulary), under its
// names. A step that does not apply in the state it meets does nothing,
// so that any list of steps is a valid schedule and dropping a step keeps
// it valid.
const (
	// OpRun moves worker W by one call: an idle worker receives a
	// delivery (the Pick-th eligible message), a worker parked at a call
	// makes it and runs on to its next call.
	OpRun = consumerharness.OpRun
	// OpCrash stops worker W where it is parked: its connections close,
	// its delivery is never acked, and it restarts idle.
	OpCrash = consumerharness.OpCrash
	// OpFail makes the call worker W is parked at return ErrInjected (of
	// package consumertest/handler), as a lost connection does.
	OpFail = consumerharness.OpFail
	// OpAdvance moves time forward by Ms milliseconds.
	OpAdvance = consumerharness.OpAdvance
	// OpDuplicate makes the broker deliver event Pick's message once more.
	OpDuplicate = consumerharness.OpDuplicate
	// OpReplay makes the broker deliver the whole stream again (on a log
	// broker: resets the group's committed offsets to the start).
	OpReplay = consumerharness.OpReplay
	// OpRebalance moves partition Pick of a log broker to worker W.
	OpRebalance = consumerharness.OpRebalance
)

// Policy is the broker's retry policy (max_attempts, backoff, ack
// timeout).
type Policy = consumerharness.Policy

// DefaultPolicy is the broker's retry policy unless a scenario says
// otherwise.
var DefaultPolicy = consumerharness.DefaultPolicy

// VerifyPolicy is a verification's retry policy unless Bounds.Policy says
// otherwise: two attempts, so that a message reaches the dead-letter
// queue within small bounds, and an ack timeout of one second.
var VerifyPolicy = consumerharness.VerifyPolicy

// Ladder are the amounts of time the default bounds move time by, besides
// the broker's deadlines and the consumer's own windows.
var Ladder = consumerharness.Ladder

// Topic is the topic every scenario's events are published on.
const Topic = consumerharness.Topic

// Fate is what becomes of an event's deliveries in a verification
// (Bounds.Events): FateOK, FateSame, FatePoison or Transient(n).
type Fate = consumerharness.Fate

// The fates of an event in a verification.
const (
	// FateOK is a healthy event.
	FateOK = consumerharness.FateOK
	// FateSame is a healthy event whose payload repeats the one before's
	// under an id of its own (a payload collision).
	FateSame = consumerharness.FateSame
	// FatePoison is an event with an amount of zero, which a handler
	// should dead-letter.
	FatePoison = consumerharness.FatePoison
)

// Transient is the fate of an event whose first n deliveries fail at
// their first begin, exec or query, as a lost connection does: the
// handler should nack them.
func Transient(n int) Fate { return consumerharness.Transient(n) }

// ParseFates reads a list of fates as the command line gives it: a count
// of ok events ("2"), or fates separated by commas
// ("ok,same,transient:2,poison").
func ParseFates(s string) ([]Fate, error) { return consumerharness.ParseFates(s) }

// Load reads a saved counterexample (a corpus file holding a
// consumer-level case) or a bare scenario.
func Load(path string) (*Scenario, error) { return consumerharness.LoadScenario(path) }

// Unmarshal parses and validates a scenario's JSON form.
func Unmarshal(b []byte) (*Scenario, error) { return consumerharness.UnmarshalScenario(b) }

// Save writes s as a counterexample of law (summary: its one line)
// against consumer into dir, atomically, named <consumer>-<law>-<hash>.json,
// and returns the path; out's trace and seed, when known, are saved with
// it. A file holding the same scenario is left as it is.
func Save(dir, consumer, law, summary string, s *Scenario, out *Outcome, seed uint64) (string, error) {
	return consumerharness.SaveScenario(dir, consumer, law, summary, s, out, seed)
}

// Generator draws scenarios of at most maxSteps steps, as Check does
// without consumertest.Faults: each kind of step by its default weight.
func Generator(maxSteps int) *rapid.Generator[*Scenario] {
	return consumerharness.Generator(maxSteps)
}

// GeneratorWith draws scenarios as Check does with consumertest.Faults(w):
// each kind of step (run, fail, crash, advance, duplicate, replay) by its
// weight in w, a kind left out by its default. w must name only those
// kinds, with weights from 0 to gen.MaxWeight.
func GeneratorWith(maxSteps int, w gen.Weights) *rapid.Generator[*Scenario] {
	return consumerharness.GeneratorWith(maxSteps, w)
}

// LogGeneratorWith draws the scenarios of a consumer of a log broker
// (partitions, rebalances, no duplicates), each kind of step by its
// weight in w (nil: the defaults).
func LogGeneratorWith(maxSteps int, w gen.Weights) *rapid.Generator[*Scenario] {
	return consumerharness.LogGeneratorWith(maxSteps, w)
}

// FuzzScenario decodes a fuzzing input into a scenario of at most
// maxSteps steps. Every input gives a valid scenario; the same input, the
// same scenario.
func FuzzScenario(data []byte, maxSteps int) *Scenario {
	return consumerharness.FuzzScenario(data, maxSteps)
}

// FuzzInput encodes s as a fuzzing input, for f.Add: FuzzScenario gives
// s back. Only scenarios of the shape Generator draws encode.
func FuzzInput(s *Scenario) ([]byte, error) { return consumerharness.FuzzInput(s) }

// Outcome is a played scenario: the trace, what the queries read before
// the first delivery, once quiet, and once quiet again after a replay of
// the stream, and the broker's final state.
type Outcome = consumerharness.Outcome

// Snapshot is what the effects and dedupe queries read at one moment.
type Snapshot = consumerharness.Snapshot

// Delivery is one delivery of a message to a worker, and how it ended.
type Delivery = consumerharness.Delivery

// Answer is what a handler answered a delivery.
type Answer = consumerharness.Answer

// The answers a handler gives.
const (
	AnswerAck    = consumerharness.AnswerAck
	AnswerNack   = consumerharness.AnswerNack
	AnswerPoison = consumerharness.AnswerPoison
)

// Fault is one fault the harness caused in a delivery.
type Fault = consumerharness.Fault

// FaultKind names a fault the harness itself caused.
type FaultKind = consumerharness.FaultKind

// The faults the harness causes.
const (
	FaultInjected    = consumerharness.FaultInjected
	FaultCrash       = consumerharness.FaultCrash
	FaultAckTimeout  = consumerharness.FaultAckTimeout
	FaultLockTimeout = consumerharness.FaultLockTimeout
	FaultContext     = consumerharness.FaultContext
)

// Trace is the numbered, human account of a run: a line per thing that
// happened.
type Trace = consumerharness.Trace

// Entry is one line of a Trace, as data.
type Entry = consumerharness.Entry

// EntryKind names what an Entry records.
type EntryKind = consumerharness.EntryKind

// The lanes of a trace besides the workers' ("w1", "w1.bg1").
const (
	LaneBroker  = consumerharness.LaneBroker
	LaneHarness = consumerharness.LaneHarness
)

// The kinds of a trace's lines.
const (
	KindProduce      = consumerharness.KindProduce
	KindDuplicate    = consumerharness.KindDuplicate
	KindReplay       = consumerharness.KindReplay
	KindTime         = consumerharness.KindTime
	KindDeliver      = consumerharness.KindDeliver
	KindRedeliver    = consumerharness.KindRedeliver
	KindIdle         = consumerharness.KindIdle
	KindSQL          = consumerharness.KindSQL
	KindPoint        = consumerharness.KindPoint
	KindInjected     = consumerharness.KindInjected
	KindAck          = consumerharness.KindAck
	KindNack         = consumerharness.KindNack
	KindDeadLetter   = consumerharness.KindDeadLetter
	KindCrash        = consumerharness.KindCrash
	KindLockWait     = consumerharness.KindLockWait
	KindLockAcquired = consumerharness.KindLockAcquired
	KindLockGiveUp   = consumerharness.KindLockGiveUp
	KindContextEnded = consumerharness.KindContextEnded
	KindPhase        = consumerharness.KindPhase
	KindNote         = consumerharness.KindNote
)
