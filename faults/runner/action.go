package runner

import (
	"github.com/idemcheck/idemcheck/impl/contract/broker"
	"github.com/idemcheck/idemcheck/impl/contract/store"
	"github.com/idemcheck/idemcheck/impl/reference/consumer"
)

// ActionKind names an observed action: an action of the world (a produce,
// a delivery, a crash, time moving, ...) or a worker's pipeline step.
type ActionKind string

// The actions of the world.
const (
	ActProduce     ActionKind = "produce"
	ActProduceFail ActionKind = "produce-fail"
	ActDuplicate   ActionKind = "duplicate"
	ActDeliver     ActionKind = "deliver"
	ActCrash       ActionKind = "crash"
	ActAdvance     ActionKind = "advance"
	ActSkew        ActionKind = "skew"
	ActClockStep   ActionKind = "clock-step"
	ActCleanup     ActionKind = "cleanup"
	ActReplay      ActionKind = "replay"
	// ActProbe is the final claim of a record left in processing.
	ActProbe ActionKind = "probe"
)

// The workers' pipeline steps, as the consumer names them.
const (
	ActClaim      = ActionKind(consumer.ActClaim)
	ActHandle     = ActionKind(consumer.ActHandle)
	ActCommit     = ActionKind(consumer.ActCommit)
	ActEffect     = ActionKind(consumer.ActEffect)
	ActMark       = ActionKind(consumer.ActMark)
	ActFail       = ActionKind(consumer.ActFail)
	ActNack       = ActionKind(consumer.ActNack)
	ActDeadLetter = ActionKind(consumer.ActDeadLetter)
	ActAck        = ActionKind(consumer.ActAck)
	ActCheck      = ActionKind(consumer.ActCheck)
)

// IsWorkerStep reports whether k is a worker's pipeline step.
func (k ActionKind) IsWorkerStep() bool {
	switch k {
	case ActClaim, ActHandle, ActCommit, ActEffect, ActMark, ActFail, ActNack, ActDeadLetter, ActAck, ActCheck:
		return true
	}
	return false
}

// WritesStore reports whether an action of kind k may write the claim store
// or the ledger: acks, nacks and DLQ publishes go to the broker, a handle
// only stages in a unit of work, a check only reads. Observers that compare
// the store after every action skip the others.
func (k ActionKind) WritesStore() bool {
	switch k {
	case ActClaim, ActCommit, ActEffect, ActMark, ActFail, ActCleanup, ActProbe:
		return true
	}
	return false
}

// Action is one observed action of a worker or of the world, in order. Only
// the fields its Kind uses are set.
type Action struct {
	Seq int `json:"seq"`
	// Line is the number of the trace line that tells this action.
	Line  int   `json:"line"`
	Phase Phase `json:"phase"`
	// Step is the index of the schedule step that caused the action; -1 in
	// the drain, the replay and the probe.
	Step int `json:"step"`
	// AtMs is true time, relative to the start.
	AtMs   int64      `json:"atMs"`
	Kind   ActionKind `json:"kind"`
	Worker string     `json:"worker,omitempty"`
	// Node is the node of a skew or clock step, or of the worker acting.
	Node string `json:"node,omitempty"`
	// Event is the index of the scenario event a produce or duplicate is of.
	Event int       `json:"event,omitempty"`
	Key   store.Key `json:"key,omitzero"`
	// Offset, Attempts, LastError and Origin describe the message a delivery
	// handed over (or the one a worker holds).
	Offset    int64         `json:"offset"`
	Attempts  int           `json:"attempts,omitempty"`
	LastError string        `json:"lastError,omitempty"`
	Origin    broker.Origin `json:"origin,omitempty"`
	// Busy is true when a crashing worker held a delivery.
	Busy bool `json:"busy,omitempty"`
	// Decision is the producer gate's answer to a produce.
	Decision broker.Decision `json:"decision,omitempty"`
	// Offsets are the messages a duplicate or a replay enqueued.
	Offsets []int64 `json:"offsets,omitempty"`
	// Ms is how far time or a clock moved (advance, skew, clock-step).
	Ms int64 `json:"ms,omitempty"`
	// WallMs is the acting node's wall-clock reading, relative to the
	// start, where it matters: after a skew or step, at a cleanup.
	WallMs int64 `json:"wallMs,omitempty"`
	// Removed are the records a cleanup deleted.
	Removed []Removal `json:"removed,omitempty"`

	// A worker step's report.
	Token   uint64              `json:"token,omitempty"`
	Claim   *store.Claim        `json:"claim,omitempty"`
	Handler *consumer.Result    `json:"handler,omitempty"`
	Commit  *store.CommitResult `json:"commit,omitempty"`
	Stale   bool                `json:"stale,omitempty"`
	Err     string              `json:"err,omitempty"`
}

// Removal is one record a cleanup deleted, with what is needed to judge
// whether it was old enough.
type Removal struct {
	Key          store.Key `json:"key"`
	FinishedAtMs int64     `json:"finishedAtMs"`
	// StoreNowMs and NodeNowMs are the store's and the worker's clocks at
	// the cleanup (absolute).
	StoreNowMs int64 `json:"storeNowMs"`
	NodeNowMs  int64 `json:"nodeNowMs"`
}

// Probe is the final claim attempt on a record left in processing.
type Probe struct {
	Key     store.Key     `json:"key"`
	Outcome store.Outcome `json:"outcome"`
	Err     string        `json:"err,omitempty"`
}

// Phase of a consumption run.
type Phase string

const (
	// PhaseSchedule: the scenario's own steps.
	PhaseSchedule Phase = "schedule"
	// PhaseDrain: the runner drives the system to quiescence.
	PhaseDrain Phase = "drain"
	// PhaseReplay: the whole stream is replayed and drained again.
	PhaseReplay Phase = "replay"
	// PhaseProbe: every record left in processing is claimed once its lease
	// has expired.
	PhaseProbe Phase = "probe"
)
