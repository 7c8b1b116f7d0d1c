package consumerharness

import (
	"fmt"
	"strings"

	"github.com/idemcheck/idemcheck/impl/contract/handler"
)

// Delivery is one delivery of a message to a worker, as the run recorded
// it: who took it, what the consumer answered, and what, if anything, the
// harness did to it. The law healthy-applied is judged from these facts:
// a healthy event may end in the dead-letter queue only when the harness's
// own faults spent every attempt of its deliveries. On a log broker each
// record of a fetched batch is a delivery (Offset its offset in its
// partition, Attempt the fetches of its batch), and a fault in Handle's
// call, or its answer, is every record's of the batch.
type Delivery struct {
	Worker string `json:"worker"`
	Event  string `json:"event"`
	Offset int64  `json:"offset"`
	// Origin is the message's origin (produced, duplicated, replayed).
	Origin  string `json:"origin"`
	Attempt int    `json:"attempt"`
	// AtMs is the scenario's time of the delivery, from its start.
	AtMs int64 `json:"atMs"`
	// Answer is what the handler returned; "" when it never returned (it
	// crashed first).
	Answer Answer `json:"answer,omitempty"`
	// Error is the error of a nack or a poison answer.
	Error string `json:"error,omitempty"`
	// Settled says the answer reached the broker (not when the worker
	// crashed at its ack or nack).
	Settled bool `json:"settled,omitempty"`
	// Faults are what the harness did to the delivery.
	Faults []Fault `json:"faults,omitempty"`
	// AfterReplay marks the deliveries made after the stream was replayed
	// (the law is judged once quiet, before the replay).
	AfterReplay bool `json:"afterReplay,omitempty"`
}

// Answer is what a handler answered a delivery.
type Answer string

// The answers.
const (
	AnswerAck    Answer = "ack"
	AnswerNack   Answer = "nack"
	AnswerPoison Answer = "poison"
)

// FaultKind names a fault the harness itself caused.
type FaultKind string

// The faults the harness causes in a delivery.
const (
	// FaultInjected: a Fail step made one of the delivery's calls return
	// ErrInjected.
	FaultInjected FaultKind = "injected failure"
	// FaultCrash: the worker crashed while it held the delivery.
	FaultCrash FaultKind = "crash"
	// FaultAckTimeout: the delivery's ack deadline passed before its
	// answer reached the broker (the schedule did not move the worker in
	// time, or it had crashed), so the broker took the message back.
	FaultAckTimeout FaultKind = "ack timeout"
	// FaultLockTimeout: the worker waited for a lock in a deadlock between
	// workers (every other worker that could release it waits too), and
	// the scheduler gave up on its behalf, returning the database's lock
	// timeout (SQLITE_BUSY, SQLSTATE 55P03) to the handler. A worker that
	// waits while every other worker is idle waits for a lock its own
	// handler holds on another connection: the scheduler gives up all the
	// same, but that is no fault of the harness.
	FaultLockTimeout FaultKind = "lock timeout"
	// FaultContext: the handler's context (a deadline it set) ended while
	// the worker waited at a call, because the schedule moved the
	// scenario's time past it: the call returned the context's error and
	// its transaction was rolled back, as the database would.
	FaultContext FaultKind = "context ended"
)

// Fault is one fault the harness caused in a delivery.
type Fault struct {
	Kind FaultKind `json:"kind"`
	// At is the call it hit, if any.
	At string `json:"at,omitempty"`
}

func (f Fault) String() string {
	if f.At == "" {
		return string(f.Kind)
	}
	return string(f.Kind) + " at " + f.At
}

// Faulted reports whether the harness caused a fault in the delivery.
func (d Delivery) Faulted() bool { return len(d.Faults) > 0 }

// String renders the delivery for a report: "attempt 2 of e1 (offset 0,
// produced) to w1 at t=100ms: answered nack "locked"; the harness did
// nothing".
func (d Delivery) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "attempt %d of %s (offset %d, %s) to %s at t=%dms: ", d.Attempt, d.Event, d.Offset, d.Origin, d.Worker, d.AtMs)
	crashed := false
	for _, f := range d.Faults {
		crashed = crashed || f.Kind == FaultCrash
	}
	switch {
	case d.Answer == "":
		b.WriteString("no answer (it crashed first)")
	case d.Answer == AnswerAck:
		b.WriteString("answered ack")
	default:
		fmt.Fprintf(&b, "answered %s %s", d.Answer, quoteLong(d.Error))
	}
	if d.Answer != "" && !d.Settled && crashed {
		b.WriteString(", which never reached the broker")
	}
	if len(d.Faults) == 0 {
		b.WriteString("; the harness did nothing to it")
		return b.String()
	}
	parts := make([]string, len(d.Faults))
	for i, f := range d.Faults {
		parts[i] = f.String()
	}
	b.WriteString("; the harness caused: " + strings.Join(parts, ", "))
	return b.String()
}

// fault records a fault in the delivery w holds.
func (r *run) fault(w *worker, kind FaultKind, at string) {
	if w.rec < 0 {
		return // no delivery in hand: the worker is starting
	}
	for i := range w.nrec {
		d := &r.deliveries[w.rec+i]
		d.Faults = append(d.Faults, Fault{Kind: kind, At: at})
	}
}

// answered records the handler's answer to the delivery w holds.
func (r *run) answered(w *worker, err error) {
	if w.rec < 0 {
		return
	}
	for i := range w.nrec {
		d := &r.deliveries[w.rec+i]
		switch {
		case err == nil:
			d.Answer = AnswerAck
		case handler.IsPoison(err):
			d.Answer, d.Error = AnswerPoison, err.Error()
		default:
			d.Answer, d.Error = AnswerNack, err.Error()
		}
	}
}

// timedOut records that the last delivery of the message at offset lost
// its ack deadline: the broker redelivered it, or dead-lettered it, with
// last error ack_timeout.
func (r *run) timedOut(offset int64) {
	for i := len(r.deliveries) - 1; i >= 0; i-- {
		d := &r.deliveries[i]
		if d.Offset != offset {
			continue
		}
		for _, f := range d.Faults {
			if f.Kind == FaultAckTimeout {
				return
			}
		}
		d.Faults = append(d.Faults, Fault{Kind: FaultAckTimeout})
		return
	}
}

// timedOutInDLQ records the ack timeouts that sent a message to the
// dead-letter queue: no delivery followed to say so.
func (r *run) timedOutInDLQ() {
	for _, e := range r.b.DLQ() {
		if !e.Poison && e.LastError == "ack_timeout" {
			r.timedOut(e.Offset)
		}
	}
}
