package runner

import (
	"fmt"
	"strings"

	"github.com/idemcheck/idemcheck/faults/scenario"
	"github.com/idemcheck/idemcheck/impl/contract/broker"
	"github.com/idemcheck/idemcheck/impl/contract/store"
	"github.com/idemcheck/idemcheck/impl/reference/consumer"
	"github.com/idemcheck/idemcheck/internal/history"
	"github.com/idemcheck/idemcheck/internal/law"
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
	// hist is the history, built by History on first use: the properties
	// of one run share it.
	hist *history.History
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

// History converts the run into the history the shared laws judge
// (package internal/history), once: the judges of one run share it, so
// the caller must not change it. The actions are read up to the final
// replay; the credits are the ledger's before it.
func (r *ConsumptionResult) History() *history.History {
	if r.hist != nil {
		return r.hist
	}
	h := &history.History{Source: history.Reference, Groups: r.Config.Consumers, MaxAttempts: r.Config.MaxAttempts,
		Quiesced: r.Quiesced, DLQQuiet: r.DLQBeforeReplay, DLQ: r.DLQ, Credits: map[law.GroupKey]int{}}
	produced := map[string]bool{}
	for _, m := range r.Messages {
		produced[m.Message.Key] = true
		if len(r.Config.Consumers) > 0 && m.Message.Group == r.Config.Consumers[0] {
			h.Produces = append(h.Produces, history.Produce{Tenant: m.Message.Tenant, Topic: m.Message.Topic, Key: m.Message.Key, Offset: m.Message.Offset, Origin: m.Message.Origin})
		}
	}
	for _, e := range r.Events {
		h.Events = append(h.Events, history.Event{ID: e.ID, Poison: e.Fate == scenario.FatePoison, Produced: produced[e.ID]})
	}
	for _, e := range r.LedgerBeforeReplay {
		h.Credits[law.GroupKey{Group: e.Consumer, Key: e.EventID}]++
	}
	for _, d := range r.deliveries() {
		h.Deliveries = append(h.Deliveries, history.Delivery{Group: d.group, Event: d.event, Offset: d.offset, Attempt: d.attempts,
			Answer: string(d.end), Reason: d.reason, GaveUp: d.gaveUp, Account: d})
	}
	r.hist = h
	return h
}

// runDelivery is one delivery of a consumption run, rebuilt from its
// actions: what the pipeline did with it and what the harness did to it.
type runDelivery struct {
	worker, group, event string
	offset               int64
	attempts             int
	atMs                 int64
	line                 int
	claimedAtMs          int64
	// faults are the harness's doing: the event's fate failing the
	// handler, a crash, the lease lost to a takeover, the ack deadline
	// passed while the worker held it, a claim locked by a delivery the
	// harness stalled or crashed.
	faults []string
	// end is how the pipeline settled it (ack, nack, dead-letter), "" while
	// it is held or when it was dropped or crashed.
	end ActionKind
	// gaveUp: it was nacked or dead-lettered with no fault of the harness.
	gaveUp bool
	// reason is the handler's reason for a nack or dead-letter.
	reason string
	what   []string
}

// deliveries replays r's actions up to the final replay into its
// deliveries.
func (r *ConsumptionResult) deliveries() []*runDelivery {
	var ds []*runDelivery
	cur := map[string]*runDelivery{}    // worker -> the delivery in hand
	holder := map[string]*runDelivery{} // group/event -> the claim's last acquirer
	for i := range r.Actions {
		a := &r.Actions[i]
		if a.Phase == PhaseReplay || a.Phase == PhaseProbe {
			break
		}
		switch {
		case a.Kind == ActDeliver:
			d := &runDelivery{worker: a.Worker, group: a.Key.Consumer, event: a.Key.ID, offset: a.Offset, attempts: a.Attempts, atMs: a.AtMs, line: a.Line}
			ds = append(ds, d)
			cur[a.Worker] = d
		case a.Kind == ActCrash:
			if d := cur[a.Worker]; d != nil && a.Busy {
				d.faults = append(d.faults, fmt.Sprintf("crash (line %d)", a.Line))
			}
			delete(cur, a.Worker)
		case a.Kind.IsWorkerStep():
			d := cur[a.Worker]
			if d == nil {
				continue
			}
			d.step(a, r, holder)
		}
	}
	return ds
}

// step records worker step a of delivery d.
func (d *runDelivery) step(a *Action, r *ConsumptionResult, holder map[string]*runDelivery) {
	ackTimeoutMs := r.Config.AckTimeoutMs
	if a.Stale {
		d.faults = append(d.faults, fmt.Sprintf("lease lost to a takeover (line %d)", a.Line))
	}
	switch a.Kind {
	case ActClaim:
		if a.Claim == nil {
			return
		}
		key := a.Key.Consumer + "/" + a.Key.ID
		switch a.Claim.Outcome {
		case store.Acquired:
			holder[key] = d
			d.claimedAtMs = a.AtMs
		case store.Locked:
			d.what = append(d.what, "claim locked")
			h := holder[key]
			switch {
			case h == nil:
			case h.end == "":
				// Held by a delivery in progress (a copy delivered
				// alongside, a stalled worker) or abandoned by a crash or a
				// takeover: the harness's doing.
				d.faults = append(d.faults, fmt.Sprintf("claim held by %s's delivery of line %d, unsettled (line %d)", h.worker, h.line, a.Line))
			case r.Conventions.FailedAttempt == store.FailedAttemptKeptMark && len(h.faults) > 0 && a.AtMs < h.claimedAtMs+r.Conventions.HoldMs(r.Config.LeaseMs):
				// The store declares that a failed attempt keeps its mark
				// until its hold ends (its lease, or the mark's own
				// expiry), and that attempt failed by the harness's
				// doing: the lock is its consequence.
				d.faults = append(d.faults, fmt.Sprintf("claim kept by %s's failed attempt of line %d until its hold ends (kept-mark; line %d)", h.worker, h.line, a.Line))
			}
		}
	case ActHandle:
		if a.Handler != nil {
			d.what = append(d.what, "handler "+string(a.Handler.Kind))
			if a.Handler.Kind == consumer.Transient {
				d.faults = append(d.faults, fmt.Sprintf("the event's fate failed the handler (line %d)", a.Line))
			}
		}
	case ActNack, ActDeadLetter:
		if a.AtMs >= d.atMs+ackTimeoutMs {
			d.faults = append(d.faults, fmt.Sprintf("ack deadline passed while the worker held it (line %d)", a.Line))
		}
		reason := ""
		if a.Handler != nil {
			d.reason = a.Handler.Reason
			reason = fmt.Sprintf(" %q", a.Handler.Reason)
		}
		d.what = append(d.what, fmt.Sprintf("%s%s (line %d)", a.Kind, reason, a.Line))
		d.end, d.gaveUp = a.Kind, len(d.faults) == 0
	case ActAck:
		d.what = append(d.what, fmt.Sprintf("ack (line %d)", a.Line))
		if d.end == "" {
			d.end = ActAck
		}
	}
}

// String is the delivery's line in a breach's detail.
func (d *runDelivery) String() string {
	harness := "the harness did nothing to it"
	if len(d.faults) > 0 {
		harness = "the harness caused: " + strings.Join(d.faults, ", ")
	}
	what := "no settlement (dropped or crashed)"
	if len(d.what) > 0 {
		what = strings.Join(d.what, ", ")
	}
	return fmt.Sprintf("line %d: %s got %s/%s (offset %d, attempt %d): %s; %s", d.line, d.worker, d.group, d.event, d.offset, d.attempts, what, harness)
}
