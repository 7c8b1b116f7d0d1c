package consumerharness

import (
	"errors"
	"fmt"
	"runtime"
	"strings"

	"github.com/idemcheck/idemcheck/internal/consumerharness/sqlhook"
	"github.com/idemcheck/idemcheck/internal/goroutine"
	"github.com/idemcheck/idemcheck/internal/situation"
	"github.com/idemcheck/idemcheck/internal/sqlscan"
)

// The database hook of a worker: every call of its handler stops here and
// waits for the scheduler's decision (run, fail, crash, give up a wait).

// hook is the scheduling hook of one worker incarnation.
type hook struct{ w *worker }

func (h hook) Before(c sqlhook.Call) error {
	if err := h.before(c); err != errCrashAt {
		return err
	}
	return crashHere(c)
}

// errCrashAt is what before and busy answer when the scheduler crashes
// the worker at the call: their caller ends the worker its own way.
var errCrashAt = errors.New("consumertest: the worker crashes here")

// before is Before, but for a crash, which it answers with errCrashAt.
func (h hook) before(c sqlhook.Call) error {
	w := h.w
	if w.crashing.Load() {
		return errCrashing
	}
	if f := w.r.found; f != nil {
		f.observe(c.SQL, c.Args, w.r.clock.NowMs())
	}
	d := w.park(wevent{kind: evParked, p: point{call: c}})
	for _, n := range c.Notes {
		w.r.noteMachineClock(fmt.Sprintf("%s (%s: %s)", n, w.name, sqlscan.Short(c.SQL, 80)))
	}
	switch d {
	case fail:
		return ErrInjected
	case crash:
		return errCrashAt
	case expired:
		return c.ContextErr()
	case giveUp:
		// A call that may not wait (a goroutine's while the run starts
		// or stops) meets no lock here: it runs.
	}
	return nil
}

// crashHere ends the crashed worker's goroutine at call c with
// runtime.Goexit, so that it never returns into the handler; the deferred
// calls of the handler run and find the connections dead. One exception:
// a query, or the end of its rows, inside a transaction. database/sql holds
// the transaction's lock across them and releases it only when the call
// returns, so a Goexit there would hang the handler's deferred Rollback;
// the call returns errCrashing instead, and every later call of the
// crashed worker fails the same way until its handler returns.
func crashHere(c sqlhook.Call) error {
	if c.InTx && (c.Op == sqlhook.Query || c.Op == sqlhook.RowsEnd) {
		return errCrashing
	}
	runtime.Goexit()
	return nil
}

func (h hook) Busy(c sqlhook.Call, err error) error {
	if berr := h.busy(c, err); berr != errCrashAt {
		return berr
	}
	return crashHere(c)
}

// busy is Busy, but for a crash outside the engine, which it answers
// with errCrashAt.
func (h hook) busy(c sqlhook.Call, err error) error {
	w := h.w
	if w.crashing.Load() {
		return err
	}
	switch w.park(wevent{kind: evBlocked, p: point{call: c, busy: err}}) {
	case giveUp:
		if w.deadlocked {
			// Given up in a deadlock between workers: the connection
			// answers as its engine's detector would (sqlhook.Deadlocker).
			w.deadlocked = false
			return sqlhook.ErrDeadlock
		}
		return err
	case crash:
		if c.InEngine {
			// Inside the driver, which must get its answer back: the
			// call fails, as every later call of the crashed worker
			// does (see crashHere).
			return errCrashing
		}
		return errCrashAt
	case expired:
		return c.ContextErr()
	}
	return nil
}

// Conflict is sqlhook.Conflicter: the database answered w's call busy at
// once, without waiting (no busy timeout, or SQLite's deadlock rule). When
// another worker's transaction held the lock, the schedule made the
// conflict: a fault of the harness's, as a lock timeout is.
func (h hook) Conflict(c sqlhook.Call, err error) {
	w := h.w
	if goroutine.Current() != w.gid || w.crashing.Load() {
		return
	}
	w.r.mu.Lock()
	w.conflicts = append(w.conflicts, conflict{at: point{call: c}, err: err})
	w.r.mu.Unlock()
}

// conflict is a busy answer a worker got at once.
type conflict struct {
	at  point
	err error
}

// flushConflicts traces w's busy answers since it last parked.
func (r *run) flushConflicts(w *worker) {
	r.mu.Lock()
	cs := w.conflicts
	w.conflicts = nil
	r.mu.Unlock()
	for _, c := range cs {
		by := r.lockHolders(w)
		if by != "" {
			r.fault(w, FaultLockTimeout, c.at.String())
			by = " (the lock is " + by + "'s)"
		}
		r.tracef(w.callEntry(KindLockGiveUp, c.at), "%s gets busy at once at %s: %s%s", w.name, c.at, quoteShort(c.err.Error()), by)
		r.trace.unbindResult(c.at.call.Seq)
		r.reach(situation.ConsumerLockWait)
	}
}

// lockHolders names the other workers that may hold a lock (inside a
// transaction, or reading rows), "" for none.
func (r *run) lockHolders(w *worker) string {
	var names []string
	for _, o := range r.workers {
		if o == w || o.conn == nil {
			continue
		}
		o.conn.EndEnded()
		if o.conn.Holding() {
			names = append(names, o.name)
		}
	}
	return strings.Join(names, " or ")
}

// park hands control back to the scheduler and waits for its decision.
// Only the handler's own goroutine parks as the worker; a call from the
// scheduler's goroutine (the Worker factory) runs at once, and one from
// any other goroutine (a library's clean-up ticker, a goroutine the
// handler started) is an actor of its own (see actors.go).
func (w *worker) park(ev wevent) decision {
	r := w.r
	switch g := goroutine.Current(); {
	case g == w.gid:
	case g == r.schedG:
		if ev.kind == evBlocked {
			return giveUp
		}
		return proceed
	default:
		return r.parkBackground(w, g, ev)
	}
	ev.w = w
	w.send(ev)
	d := awaitDecision(w.resume, ev.p, r.bubble)
	if d == expired {
		// Its context ended while it waited: it goes on with the error,
		// on its own, and the scheduler hears of it once the bubble is
		// settled (see collectWoken).
		r.mu.Lock()
		w.expiry = &expiry{at: ev.p, err: ev.p.call.ContextErr()}
		r.mu.Unlock()
		w.woke.Store(true)
	}
	return d
}

// send hands ev to the scheduler, or, while the worker moves on its own,
// leaves it for collectWoken.
func (w *worker) send(ev wevent) {
	if w.woke.Load() {
		// A copy of its own: ev stays on the stack on the common path.
		pending := new(wevent)
		*pending = ev
		w.r.mu.Lock()
		w.pending = pending
		w.r.mu.Unlock()
		return
	}
	w.r.events <- ev
}

// awaitDecision waits for the scheduler's decision on a call parked at p.
// In a bubble a SQL call also wakes when its context, or its
// transaction's, ends: database/sql would otherwise wait for the call to
// return before it rolls the transaction back, and the bubble's clock
// would stop with it.
func awaitDecision(resume chan decision, p point, bubble bool) decision {
	callDone, txDone := p.call.Done()
	if !bubble || (callDone == nil && txDone == nil) || p.settle || p.what != "" {
		return <-resume
	}
	select {
	case d := <-resume:
		return d
	case <-callDone:
		return expired
	case <-txDone:
		return expired
	}
}
