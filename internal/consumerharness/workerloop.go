package consumerharness

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"runtime/debug"
	"runtime/pprof"

	"github.com/idemcheck/idemcheck/impl/contract/handler"
	"github.com/idemcheck/idemcheck/internal/goroutine"
)

// A worker's own goroutine: it runs the Worker factory, then the handler
// on each delivery, and tells the scheduler where it stopped.

// job is one delivery for a worker's goroutine.
type job struct {
	ctx context.Context
	m   handler.Message
}

// loop is a worker incarnation's goroutine: it handles one delivery after
// another, so that its stack, grown by the database driver, is grown
// once. A crash ends it (runtime.Goexit); the restarted worker has its own.
func (w *worker) loop(jobs chan job, id string) {
	defer w.r.loops.Done()
	growStack(0)
	w.gid = goroutine.Current()
	if !w.build(id) {
		return
	}
	// Goroutines the handler starts inherit these labels: those still
	// alive once the scenario is over are found by them (see leaked).
	pprof.SetGoroutineLabels(pprof.WithLabels(context.Background(), pprof.Labels(runLabel, w.r.id, originLabel, w.name+"'s handler")))
	for j := range jobs {
		w.handle(j.ctx, j.m)
	}
}

// build runs the Worker factory on the worker's goroutine and tells the
// scheduler what it returned; false when the goroutine ends there (a crash
// in the factory, or a panic, which the scheduler is told of).
func (w *worker) build(id string) (ok bool) {
	returned := false
	defer func() {
		if returned {
			return
		}
		if p := recover(); p != nil {
			w.send(wevent{w: w, kind: evPanic, panic: fmt.Sprintf("%v\n%s", p, trimStack(debug.Stack()))})
			return
		}
		w.send(wevent{w: w, kind: evExited})
	}()
	var ev wevent
	pprof.Do(context.Background(), pprof.Labels(runLabel, w.r.id, originLabel, "the Worker factory of "+id), func(context.Context) {
		ev.fn, ev.closer, ev.startErr = w.r.c.worker()(id, w.db)
	})
	returned = true
	ev.w, ev.kind = w, evStarted
	w.send(ev)
	return true
}

// handle runs the handler on w's goroutine, then parks to settle.
func (w *worker) handle(ctx context.Context, m handler.Message) {
	returned, done := false, false
	defer func() {
		if done {
			return
		}
		if p := recover(); p != nil && !returned {
			if h := handlerHung(p); h != "" {
				w.send(wevent{w: w, kind: evPanic, panic: h, hung: h})
				return
			}
			w.send(wevent{w: w, kind: evPanic, panic: fmt.Sprintf("%v\n%s", p, trimStack(debug.Stack()))})
			return
		}
		w.send(wevent{w: w, kind: evExited})
	}()
	err := w.fn(ctx, w.db, m)
	returned = true
	if w.crashing.Load() {
		done = true
		w.send(wevent{w: w, kind: evExited})
		return
	}
	what := "ack " + m.EventID
	switch {
	case w.lg != nil:
		what = w.logSettleWhat(err)
	case err == nil:
	case handler.IsPoison(err):
		what = "dead-letter " + m.EventID + " (poison: " + quoteShort(err.Error()) + ")"
	default:
		what = "nack " + m.EventID + " (" + quoteShort(err.Error()) + ")"
	}
	if w.park(wevent{kind: evParked, p: point{what: what, settle: true, result: err}}) == crash {
		runtime.Goexit()
	}
	done = true
	w.send(wevent{w: w, kind: evDone})
}

// handlerHung is the text of a panic that says the handler hung, "" for
// any other: an error with a HandlerHung method that returns true, as a
// process consumer's (impl/adapter/consumerproc) whose process stopped
// answering mid-delivery and was killed.
func handlerHung(p any) string {
	err, ok := p.(error)
	if !ok {
		return ""
	}
	var h interface{ HandlerHung() bool }
	if errors.As(err, &h) && h.HandlerHung() {
		return err.Error()
	}
	return ""
}
