package consumer

import (
	"context"
	"errors"

	"github.com/idemcheck/idemcheck/impl/contract/event"
	"github.com/idemcheck/idemcheck/impl/contract/store"
)

// What a Stage of a pipeline of its own (impl/mutant has several) may read
// and change of the worker it runs on. The reference stages use the same
// fields directly.

// Key returns the key of the delivery in hand.
func (w *Worker) Key() store.Key { return w.key }

// Event returns the decoded event of the delivery in hand.
func (w *Worker) Event() event.OrderPaid { return w.ev }

// Token returns the fencing token the worker holds (0: none).
func (w *Worker) Token() uint64 { return w.token }

// SetToken records a claim the worker made outside ClaimThen.
func (w *Worker) SetToken(t uint64) { w.token = t }

// Result returns the handler's last result.
func (w *Worker) Result() Result { return w.result }

// SetResult sets the result Nack, Fail and DeadLetter act on.
func (w *Worker) SetResult(r Result) { w.result = r }

// Store returns the claim store the worker uses.
func (w *Worker) Store() store.Store { return w.deps.Store }

// RunHandlerOutsideUnit runs the handler with no unit of work: what it
// credits is kept in the worker (Staged) for the pipeline to write itself.
// It records and returns the handler's result.
func (w *Worker) RunHandlerOutsideUnit() Result {
	buf := &stagingTx{w: w}
	w.staged = nil
	w.result = w.deps.Handler(buf, w.cfg.Consumer, w.ev)
	return w.result
}

// Staged returns what the last RunHandlerOutsideUnit credited.
func (w *Worker) Staged() []store.Entry { return w.staged }

// Memory returns the worker's process memory: a set of keys that lives
// until the worker crashes.
func (w *Worker) Memory() map[store.Key]bool {
	if w.memory == nil {
		w.memory = map[store.Key]bool{}
	}
	return w.memory
}

// CountProcessed counts a delivery whose effects were committed.
func (w *Worker) CountProcessed() { w.metrics.Processed++ }

// CountDedup counts a duplicate skipped.
func (w *Worker) CountDedup() { w.metrics.Dedup++ }

// CountRetry counts a retry (a nack or an abandoned delivery) by reason.
func (w *Worker) CountRetry(reason string) { w.metrics.retry(reason) }

// stagingTx is the unit of work RunHandlerOutsideUnit hands the handler: it
// only collects credits into the worker.
type stagingTx struct{ w *Worker }

func (b *stagingTx) Credit(e store.Entry) { b.w.staged = append(b.w.staged, e) }
func (b *stagingTx) Commit(context.Context) (store.CommitResult, error) {
	return store.CommitResult{}, errNotAUnit
}
func (b *stagingTx) Rollback(context.Context) error { b.w.staged = nil; return nil }

var errNotAUnit = errors.New("a handler run outside a unit of work is written by its pipeline, not committed")

// LeaseMs returns the lease the worker claims with.
func (w *Worker) LeaseMs() int64 { return w.cfg.LeaseMs }
