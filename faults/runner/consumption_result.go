package runner

import (
	"github.com/idemcheck/idemcheck/faults/scenario"
	"github.com/idemcheck/idemcheck/impl/contract/broker"
	"github.com/idemcheck/idemcheck/impl/contract/store"
	"github.com/idemcheck/idemcheck/impl/reference/consumer"
)

// ConsumptionResult is what a consumption run observed: every action in
// order, and the state before and after the final replay and at the end.
type ConsumptionResult struct {
	Config  scenario.Config  `json:"config"`
	Events  []scenario.Event `json:"events"`
	StartMs int64            `json:"startMs"`
	// Conventions are the store's declared conventions, which some laws
	// read (a failed attempt's kept mark locks its key until its lease
	// ends, say).
	Conventions store.Conventions `json:"conventions"`
	Actions     []Action          `json:"actions"`
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

	// buf is where Actions and the trace's entries came from, for
	// Outcome.Release to hand back.
	buf *runBuffers
}

// NodeOf returns the node a worker runs on.
func (r *ConsumptionResult) NodeOf(worker string) string {
	for _, w := range r.Config.Workers {
		if w.Name == worker {
			return w.Node
		}
	}
	return ""
}
