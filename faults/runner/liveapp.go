package runner

import (
	"context"
	"fmt"
	"time"

	"github.com/idemcheck/idemcheck/faults/scenario"
	"github.com/idemcheck/idemcheck/impl/contract/broker"
	"github.com/idemcheck/idemcheck/impl/contract/store"
)

// A live run's deliveries are processed by the reference consumer (the
// store and pipeline of a target), or by an application given as a
// LiveApp: a team's own consumer, with its own database, which the runner
// drives one delivery at a time and crashes between deliveries' steps.

// LiveApp is a consumer application under a live run, one instance per
// run (a fresh database each time).
type LiveApp interface {
	// Group opens the application's consumer of one consumer group (each
	// group is an application of its own, with its own database).
	Group(ctx context.Context, group string) (LiveAppGroup, error)
	// Close releases every group's resources.
	Close() error
}

// LiveAppResult is how the application answered a delivery.
type LiveAppResult struct {
	// Kind is "" (success: ack), "transient" (nack) or "poison" (dead-letter
	// and ack).
	Kind string
	// Reason is the error text of a failure.
	Reason string
}

// The failure kinds of a LiveAppResult.
const (
	AppTransient = "transient"
	AppPoison    = "poison"
)

// LiveAppGroup is one group's consumer in a LiveApp.
type LiveAppGroup interface {
	// Handle runs the handler on a delivered message to its end and says
	// how it ended.
	Handle(ctx context.Context, m broker.Message) LiveAppResult
	// Crash ends the consumer's process as a crash does (what it held in
	// memory is gone) and starts it again.
	Crash() error
	// Credited returns the ids of the events whose effect the consumer
	// applied, once per application (an event applied twice is listed
	// twice).
	Credited(ctx context.Context) ([]string, error)
}

// appTake is take for a LiveApp, from the delivery d recorded in rec: the
// handler runs whole (crashAfter 0 is a crash before it, any other crash
// point a crash after it, before the ack); a stall runs it and never acks.
func (r *liveRun) appTake(g *liveGroup, d broker.LiveDelivery, rec *LiveDeliveryRecord, crashAfter int, stall bool) {
	if crashAfter == 0 {
		r.appCrash(g, rec)
		rec.Reason = "before the handler"
		return
	}
	m := d.Message
	res := LiveAppResult{}
	if i, ok := r.events[m.Key]; ok && r.injectTransient(g.name, i) {
		// The scenario's transient failure, injected before the handler
		// runs: a team's handler cannot be told to fail.
		res = LiveAppResult{Kind: AppTransient, Reason: LiveReasonFateInjected}
	} else {
		res = g.app.Handle(r.ctx, m)
	}
	switch {
	case crashAfter > 0:
		r.appCrash(g, rec)
		rec.Reason = "after the handler, before the ack"
	case stall:
		rec.Outcome = LiveStalled
		if !r.caps.AckTimeout {
			t0 := time.Now()
			r.sleep(time.Duration(r.sc.AckTimeoutMs) * time.Millisecond)
			r.slept += time.Since(t0)
			r.appCrash(g, rec)
			rec.Outcome = LiveStalled
		}
	case res.Kind == AppPoison:
		rec.Outcome, rec.Reason = LiveDeadLetter, res.Reason
		if err := g.session.DeadLetter(r.ctx, d, res.Reason); err != nil {
			r.fail("dead-letter", err)
			return
		}
		r.fail("ack", g.session.Ack(r.ctx, d))
	case res.Kind == AppTransient:
		rec.Outcome, rec.Reason = LiveNacked, res.Reason
		r.fail("nack", g.session.Nack(r.ctx, d, r.backoff(d), res.Reason))
	default:
		if err := g.session.Ack(r.ctx, d); err != nil {
			rec.Outcome, rec.Reason = LiveAckFailed, err.Error()
			r.fail("ack", err)
			return
		}
		rec.Outcome = LiveAcked
	}
}

// injectTransient counts a handler run of event i in group and reports
// whether the scenario fails it transiently.
func (r *liveRun) injectTransient(group string, i int) bool {
	return countRun(r.sc.Events, r.runs, group, i) == scenario.FateTransient
}

// appCrash closes g's connection without an ack, restarts the
// application's consumer and reconnects.
func (r *liveRun) appCrash(g *liveGroup, rec *LiveDeliveryRecord) {
	rec.Outcome = LiveCrashed
	if err := g.app.Crash(); err != nil {
		r.notef("%s: restart after the crash: %v", g.name, err)
	}
	_ = g.session.Close()
	s, err := r.live.Session(r.ctx, g.name)
	if err != nil {
		r.fail("reconnect "+g.name, err)
		return
	}
	g.session = s
}

// appLedger reads what every group's consumer credited.
func (r *liveRun) appLedger() ([]store.Entry, error) {
	var out []store.Entry
	for _, g := range r.order {
		ids, err := g.app.Credited(r.ctx)
		if err != nil {
			return nil, fmt.Errorf("runner: read %s's effects: %w", g.name, err)
		}
		for _, id := range ids {
			out = append(out, store.Entry{Consumer: g.name, EventID: id})
		}
	}
	return out, nil
}
