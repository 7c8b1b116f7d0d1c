package consumerharness

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"testing/synctest"

	"github.com/idemcheck/idemcheck/internal/goroutine"
	"github.com/idemcheck/idemcheck/internal/law"
)

// Goroutines other than the handlers'.
//
// A library a team's consumer uses may start goroutines of its own: a key
// store's periodic clean-up, a batcher's flusher, a goroutine the handler
// starts and does not wait for. Their database calls reach the worker's
// hook like the handler's, but they are not the worker: each such
// goroutine is an actor of its own, named after the worker whose database
// handle it uses ("w1.bg1", in the order they first call, their calls
// sorted when several arrive at once), with a lane of its own in the trace.
//
// In a bubble, the scheduler runs them between the steps of the schedule:
// once the bubble is settled (every goroutine blocked), each actor that
// waits at a call makes it and runs on to its next one, until none waits.
// So their calls interleave with the workers' at every step boundary, the
// same way in every play of a scenario. A call that meets a lock waits
// until something else moved, and gives up (its error is the database's
// busy answer) when nothing else can move. While the scheduler waits for a
// worker, an actor that arrives is run too, once the worker has had the
// chance to park first: the worker may be waiting for it (a library's
// mutex held across the call).
//
// When a worker crashes, its actors that wait at a call crash with it
// (their goroutines end there, as the handler's does), and the calls of
// those that do not fail on the dead connections, as in a process that
// died. While the run starts its workers (the Worker factory, on the
// scheduler's own goroutine) and stops them (their Closers), and outside a
// bubble, such calls run at once, unscheduled.

// actor is a goroutine other than a handler's that made a call.
type actor struct {
	w    *worker
	name string
	// ev is the call it waits at; arrived says it waits for the
	// scheduler.
	ev      wevent
	arrived bool
	// state is parked or blocked; blockedAt is run.moves when it met the
	// lock.
	state     wstate
	blockedAt int
	// resume carries the scheduler's decision; buffered, so that the
	// scheduler never blocks on an actor that left (its context ended).
	resume chan decision
}

// expiry is where a worker's context ended while it waited at a call.
type expiry struct {
	at  point
	err error
}

// parkBackground parks a goroutine other than w's handler at a call
// through w's connections until the scheduler decides.
func (r *run) parkBackground(w *worker, g goroutine.ID, ev wevent) decision {
	if r.free.Load() {
		if ev.kind == evBlocked {
			return giveUp
		}
		return proceed
	}
	ev.w = w
	r.mu.Lock()
	a := r.bg[g]
	if a == nil {
		a = &actor{w: w, state: parked, resume: make(chan decision, 1)}
		r.bg[g] = a
	}
	a.ev, a.arrived = ev, true
	r.mu.Unlock()
	select {
	case r.bgKick <- struct{}{}:
	default:
	}
	d := awaitDecision(a.resume, ev.p, r.bubble)
	if d == expired {
		r.mu.Lock()
		a.arrived = false
		r.mu.Unlock()
	}
	return d
}

// serveBackground lets every actor that waits at a call make it and run
// on, until none waits (see above). Only in a bubble.
func (r *run) serveBackground() {
	if !r.bubble || r.free.Load() {
		return
	}
	for n := 0; r.failure == nil; n++ {
		synctest.Wait()
		r.collectWoken()
		a := r.nextArrived()
		if a == nil {
			return
		}
		if n >= maxActions {
			r.fail(law.Quiesces, fmt.Sprintf("goroutines other than the handlers' made more than %d calls between two steps: a library loops", maxActions))
			return
		}
		r.actBackground(a)
	}
}

// nextArrived returns the actor to move next, naming those that arrived
// for the first time; nil when none may move.
func (r *run) nextArrived() *actor {
	r.mu.Lock()
	defer r.mu.Unlock()
	var list []*actor
	for _, a := range r.bg {
		if a.arrived && !(a.state == blocked && a.blockedAt == r.moves) {
			list = append(list, a)
		}
	}
	if len(list) == 0 {
		return nil
	}
	// Named actors by name, then the new ones by what they call: the
	// same order in every play.
	slices.SortFunc(list, func(a, b *actor) int {
		if c := cmp.Compare(a.w.n, b.w.n); c != 0 {
			return c
		}
		if (a.name == "") != (b.name == "") {
			if a.name == "" {
				return 1
			}
			return -1
		}
		if a.name != "" {
			return cmp.Compare(a.name, b.name)
		}
		return cmp.Compare(a.ev.p.String(), b.ev.p.String())
	})
	for _, a := range list {
		if a.name == "" {
			r.bgSeq[a.w.name]++
			a.name = fmt.Sprintf("%s.bg%d", a.w.name, r.bgSeq[a.w.name])
		}
	}
	return list[0]
}

// actBackground moves actor a by one call.
func (r *run) actBackground(a *actor) {
	r.mu.Lock()
	ev := a.ev
	a.arrived = false
	r.mu.Unlock()
	r.progress.Add(1)
	r.g.enter(phaseScheduling)
	e := Entry{Kind: pointKind(ev.p), Worker: a.w.name, Lane: a.name}
	if ev.kind == evBlocked {
		if a.state != blocked {
			// It met the lock: it waits until something else moves.
			a.state, a.blockedAt = blocked, r.moves
			e.Kind = KindLockWait
			r.tracef(e, "%s waits for a lock at %s", a.name, ev.p)
			r.mu.Lock()
			a.arrived = true
			r.mu.Unlock()
			return
		}
		// Something moved since: it tries again, and either meets the
		// lock again or goes on.
		a.resume <- retry
		synctest.Wait()
		r.mu.Lock()
		again := a.arrived && a.ev.kind == evBlocked
		r.mu.Unlock()
		if again {
			// Still waiting: nothing to say until it gets the lock.
			a.blockedAt = r.moves
			return
		}
		a.state = parked
		r.moves++
		e.Kind = KindLockAcquired
		r.traceCall(ev.p, r.tracef(e, "%s gets the lock at %s", a.name, ev.p))
		return
	}
	a.state = parked
	r.moves++
	r.traceCall(ev.p, r.tracef(e, "%s %s", a.name, ev.p))
	a.resume <- proceed
}

// unblockBackground gives up the wait of the first actor that waits for a
// lock, when nothing else can move: the database's busy answer, as a lock
// timeout. It reports whether there was one.
func (r *run) unblockBackground() bool {
	r.mu.Lock()
	var list []*actor
	for _, a := range r.bg {
		if a.arrived && a.state == blocked {
			list = append(list, a)
		}
	}
	r.mu.Unlock()
	if len(list) == 0 {
		return false
	}
	slices.SortFunc(list, func(a, b *actor) int { return cmp.Compare(a.name, b.name) })
	a := list[0]
	r.mu.Lock()
	a.arrived = false
	r.mu.Unlock()
	r.tracef(Entry{Kind: KindLockGiveUp, Worker: a.w.name, Lane: a.name}, "%s gives up waiting at %s: %s", a.name, a.ev.p, quoteShort(fmt.Sprint(a.ev.p.busy)))
	r.trace.unbindResult(a.ev.p.call.Seq)
	a.state = parked
	a.resume <- giveUp
	return true
}

// backgroundBlocked reports whether an actor waits for a lock.
func (r *run) backgroundBlocked() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, a := range r.bg {
		if a.arrived && a.state == blocked {
			return true
		}
	}
	return false
}

// crashBackground crashes, with w, the actors of w that wait at a call,
// and forgets every actor of w: those that do not wait find its
// connections dead.
func (r *run) crashBackground(w *worker) {
	r.mu.Lock()
	var list []*actor
	for g, a := range r.bg {
		if a.w != w {
			continue
		}
		if a.arrived {
			a.arrived = false
			list = append(list, a)
		}
		delete(r.bg, g)
	}
	r.mu.Unlock()
	slices.SortFunc(list, func(a, b *actor) int { return cmp.Compare(a.name+a.ev.p.String(), b.name+b.ev.p.String()) })
	for _, a := range list {
		if a.name != "" {
			r.tracef(Entry{Kind: KindCrash, Worker: w.name, Lane: a.name}, "%s ends with %s at %s", a.name, w.name, a.ev.p)
		}
		a.resume <- crash
	}
	if len(list) > 0 && r.bubble {
		synctest.Wait()
	}
}

// releaseBackground lets every actor that waits at a call go on,
// unscheduled (the run is stopping).
func (r *run) releaseBackground() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, a := range r.bg {
		if !a.arrived {
			continue
		}
		a.arrived = false
		if a.ev.kind == evBlocked {
			a.resume <- giveUp
		} else {
			a.resume <- proceed
		}
	}
}

// collectWoken hears from the workers that moved on their own (their
// context ended while they waited at a call): where it ended, and where
// they wait now. It runs once the bubble is settled.
func (r *run) collectWoken() {
	for _, w := range r.workers {
		if !w.woke.Load() {
			continue
		}
		r.mu.Lock()
		ev, ex := w.pending, w.expiry
		w.pending, w.expiry = nil, nil
		r.mu.Unlock()
		if ex != nil {
			r.contextEnded(w, ex)
		}
		if ev == nil {
			w.state = running
			continue
		}
		w.woke.Store(false)
		r.handle(w, *ev)
	}
}

// contextEnded records that w's context ended at a call it waited at.
func (r *run) contextEnded(w *worker, ex *expiry) {
	tx := ""
	if ex.at.call.InTx {
		tx = "; its transaction is rolled back"
	}
	when := ""
	for _, ctx := range []context.Context{ex.at.call.Ctx, ex.at.call.TxCtx} {
		if ctx == nil || ctx.Err() == nil {
			continue
		}
		if dl, ok := ctx.Deadline(); ok && when == "" {
			when = fmt.Sprintf(" (its deadline, t=%dms)", dl.UnixMilli()-startMs)
		}
	}
	r.fault(w, FaultContext, ex.at.String())
	r.tracef(w.callEntry(KindContextEnded, ex.at), "%s's context ended%s at %s: the call returns %q%s", w.name, when, ex.at, fmt.Sprint(ex.err), tx)
}
