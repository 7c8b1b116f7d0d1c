package consumerharness

import (
	"strings"

	"github.com/idemcheck/idemcheck/impl/contract/broker"
)

// Entry is one line of a Trace as data: who acted, on which event, what
// kind of thing happened and when, beside the line's text. Reports that
// draw a run (one lane per worker, one for the broker) read it instead of
// parsing the text.
type Entry struct {
	// Line is the line's number in the trace, from 1.
	Line int `json:"line"`
	// Lane is who acted: LaneBroker, LaneHarness, a worker ("w1"), or a
	// goroutine other than a handler's that made calls through a worker's
	// database handle ("w1.bg1": a library's clean-up, say).
	Lane string `json:"lane"`
	// Worker is the worker concerned, "" for none: the worker that acted,
	// or, for a delivery (in the broker's lane), the one that receives it.
	Worker string `json:"worker,omitempty"`
	// Kind is what happened.
	Kind EntryKind `json:"kind"`
	// Op is the database call of a KindSQL, KindInjected, KindCrash or
	// lock line (begin, exec, query, rows end, commit, rollback), "" for
	// other lines and for a worker that crashed elsewhere.
	Op string `json:"op,omitempty"`
	// Event is the id of the event concerned, "" for none: the event
	// produced or duplicated, or the one the worker was handling.
	Event string `json:"event,omitempty"`
	// Attempt is the delivery's attempt number, on a delivery.
	Attempt int `json:"attempt,omitempty"`
	// AtMs is the scenario's time, in ms since its start.
	AtMs int64 `json:"atMs"`
	// Step is the step of the schedule being played, from 1; 0 once the
	// schedule is over (the drain, the replay).
	Step int `json:"step,omitempty"`
	// DLQ is the number of dead-letter entries once the line happened: a
	// line after which it grew is where the broker dead-lettered.
	DLQ int `json:"dlq"`
	// Text is the line as the numbered trace prints it.
	Text string `json:"text"`
	// Effect marks a statement that changed rows of a table the
	// consumer's Effects query reads (rows affected > 0): where an
	// event's effect may have been applied. InTx says it ran inside a
	// transaction, applied only if that transaction commits (the
	// worker's next commit line). Rows is what the statement returned, as
	// the end of Text says it ("1 row affected", "1 row: (0)"), "" when
	// nothing is known.
	Effect bool   `json:"effect,omitempty"`
	InTx   bool   `json:"inTx,omitempty"`
	Result string `json:"result,omitempty"`
}

// EntryKind names what a trace line tells.
type EntryKind string

// The lanes of a trace that are not workers.
const (
	// LaneBroker is the broker's: produce, duplicates, replays, every
	// delivery, and time moving.
	LaneBroker = "broker"
	// LaneHarness is the harness's own: the phases of the run (drain,
	// replay) and any line no actor claims.
	LaneHarness = "harness"
)

// The kinds of trace lines.
const (
	// In the broker's lane.
	KindProduce   EntryKind = "produce"
	KindDuplicate EntryKind = "duplicate"
	KindReplay    EntryKind = "replay"
	KindTime      EntryKind = "time"
	// KindDeliver is a first delivery, KindRedeliver a later attempt (after
	// a nack or an ack timeout); Worker names the worker that receives it.
	KindDeliver   EntryKind = "deliver"
	KindRedeliver EntryKind = "redeliver"

	// In a worker's lane.
	KindIdle         EntryKind = "nothing-to-receive"
	KindSQL          EntryKind = "sql"
	KindPoint        EntryKind = "point"
	KindInjected     EntryKind = "injected-failure"
	KindAck          EntryKind = "ack"
	KindNack         EntryKind = "nack"
	KindDeadLetter   EntryKind = "dead-letter"
	KindCrash        EntryKind = "crash"
	KindLockWait     EntryKind = "lock-wait"
	KindLockAcquired EntryKind = "lock-acquired"
	KindLockGiveUp   EntryKind = "lock-given-up"
	// KindContextEnded: the context of the call the worker waited at
	// ended (its deadline passed as the scenario's time moved).
	KindContextEnded EntryKind = "context-ended"

	// In the harness's lane.
	KindPhase EntryKind = "phase"
	KindNote  EntryKind = "note"
)

// lane is the lane of a line of kind k concerning worker.
func (k EntryKind) lane(worker string) string {
	switch k {
	case KindProduce, KindDuplicate, KindReplay, KindTime, KindDeliver, KindRedeliver:
		return LaneBroker
	case KindPhase, KindNote:
		return LaneHarness
	}
	if worker == "" {
		return LaneHarness
	}
	return worker
}

// Entries returns every line as data, in order.
func (t *Trace) Entries() []Entry {
	if t == nil {
		return nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]Entry, len(t.entries))
	for i, e := range t.entries {
		out[i] = e.meta
		out[i].Line = i + 1
		out[i].Text = e.text()
		if e.res != nil {
			out[i].Result = strings.TrimPrefix(e.res.String(), " -> ")
			out[i].Effect = e.effect && e.res.hasAffected && e.res.affected > 0
			out[i].InTx = e.inTx && out[i].Effect
		}
	}
	return out
}

// tracef appends a line about what e says (Kind, Worker, Event, Op,
// Attempt); the run fills in the lane, the time, the step and the
// dead-letter count.
func (r *run) tracef(e Entry, format string, args ...any) int {
	if e.Lane == "" {
		e.Lane = e.Kind.lane(e.Worker)
	}
	e.AtMs = r.now()
	if e.Kind == KindPhase {
		r.trace.over = true
	}
	if !r.trace.over {
		e.Step = r.trace.steps
	}
	r.b.EachDLQ(func(*broker.DLQEntry) { e.DLQ++ })
	return r.trace.add(e, format, args...)
}

// entry is a line of kind k about w and the event it handles.
func (w *worker) entry(k EntryKind) Entry {
	return Entry{Kind: k, Worker: w.name, Event: w.ev.EventID}
}

// callEntry is a line of kind k about w at point p.
func (w *worker) callEntry(k EntryKind, p point) Entry {
	e := w.entry(k)
	if p.what == "" && !p.settle {
		e.Op = string(p.call.Op)
	}
	return e
}

// deliveryEntry is the line of delivery d to w.
func deliveryEntry(w *worker, d broker.Delivery) Entry {
	k := KindDeliver
	if d.Message.Attempts > 1 {
		k = KindRedeliver
	}
	return Entry{Kind: k, Worker: w.name, Event: d.Message.Key, Attempt: d.Message.Attempts}
}

// pointKind is the kind of the line of a worker making its call at p.
func pointKind(p point) EntryKind {
	if p.what != "" {
		return KindPoint
	}
	return KindSQL
}
