package runner

import (
	"github.com/idemcheck/idemcheck/faults/scenario"
	"github.com/idemcheck/idemcheck/impl/contract/broker"
	"github.com/idemcheck/idemcheck/impl/contract/store"
	"github.com/idemcheck/idemcheck/impl/reference/consumer"
)

// Phase of a consumption run.
type Phase string

const (
	// PhaseSchedule: the scenario's own steps.
	PhaseSchedule Phase = "schedule"
	// PhaseDrain: the runner drives the system to quiescence.
	PhaseDrain Phase = "drain"
	// PhaseReplay: the whole stream is replayed and drained again.
	PhaseReplay Phase = "replay"
)

// Action is one observed action of a worker or of the world, in order.
type Action struct {
	Seq int `json:"seq"`
	// Line is the number of the trace line that tells this action.
	Line   int    `json:"line"`
	Phase  Phase  `json:"phase"`
	Step   int    `json:"step"` // index in the schedule; -1 in drain and replay
	AtMs   int64  `json:"atMs"` // true time, relative to the start
	Worker string `json:"worker,omitempty"`
	// Kind is the consumer action ("claim", "commit", ...) or a world action
	// ("deliver", "crash", "produce", "cleanup", ...).
	Kind     string              `json:"kind"`
	Key      store.Key           `json:"key,omitempty"`
	Offset   int64               `json:"offset"`
	Attempts int                 `json:"attempts,omitempty"`
	Origin   broker.Origin       `json:"origin,omitempty"`
	Token    uint64              `json:"token,omitempty"`
	Claim    *store.Claim        `json:"claim,omitempty"`
	Handler  *consumer.Result    `json:"handler,omitempty"`
	Commit   *store.CommitResult `json:"commit,omitempty"`
	Stale    bool                `json:"stale,omitempty"`
	Err      string              `json:"err,omitempty"`
}

// FenceCheck records a commit, mark or fail made with a token older than the
// newest one issued for its key, and whether it changed the store.
type FenceCheck struct {
	Line        int       `json:"line"`
	Worker      string    `json:"worker"`
	Key         store.Key `json:"key"`
	Token       uint64    `json:"token"`
	LatestToken uint64    `json:"latestToken"`
	Rejected    bool      `json:"rejected"`
	// Diff is the change the call made to records and ledger (empty: none).
	Diff string `json:"diff,omitempty"`
}

// Breach is an atomicity breach seen between two actions.
type Breach struct {
	Line   int    `json:"line"`
	Detail string `json:"detail"`
}

// Removal is one record a cleanup deleted.
type Removal struct {
	Line         int       `json:"line"`
	Worker       string    `json:"worker"`
	Key          store.Key `json:"key"`
	FinishedAtMs int64     `json:"finishedAtMs"`
	StoreNowMs   int64     `json:"storeNowMs"`
	NodeNowMs    int64     `json:"nodeNowMs"`
	// Premature is true when the record was younger than the retention
	// window by the store's clock.
	Premature bool `json:"premature"`
}

// Probe is the final claim attempt on a record left in processing.
type Probe struct {
	Key     store.Key     `json:"key"`
	Outcome store.Outcome `json:"outcome"`
	Err     string        `json:"err,omitempty"`
}

// ConsumptionResult is what a consumption run observed.
type ConsumptionResult struct {
	Config  scenario.Config  `json:"config"`
	Events  []scenario.Event `json:"events"`
	StartMs int64            `json:"startMs"`
	Actions []Action         `json:"actions"`
	Fences  []FenceCheck     `json:"fences,omitempty"`
	Breach  []Breach         `json:"breaches,omitempty"`
	Removed []Removal        `json:"removed,omitempty"`
	// Quiesced is false when the drain gave up: something kept the broker busy.
	Quiesced  bool   `json:"quiesced"`
	DrainNote string `json:"drainNote,omitempty"`
	// LedgerBeforeReplay and LedgerAfterReplay bracket the final replay.
	LedgerBeforeReplay []store.Entry     `json:"ledgerBeforeReplay"`
	LedgerAfterReplay  []store.Entry     `json:"ledgerAfterReplay"`
	DLQBeforeReplay    []broker.DLQEntry `json:"dlqBeforeReplay"`
	// Final state.
	Ledger   []store.Entry               `json:"ledger"`
	Records  []store.Record              `json:"records"`
	DLQ      []broker.DLQEntry           `json:"dlq"`
	Messages []broker.MessageState       `json:"messages"`
	Metrics  map[string]consumer.Metrics `json:"metrics"`
	Probes   []Probe                     `json:"probes,omitempty"`
	// Errors are unexpected errors from the implementation, by action.
	Errors []string `json:"errors,omitempty"`
}
