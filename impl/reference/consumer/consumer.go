// Package consumer is the reference at-least-once consumer, written as an
// explicit pipeline of steps so that a schedule can interleave workers and
// crash one between any two steps:
//
//	receive → claim → handle (inside a unit of work) → commit (effect + mark) → ack
//
// A duplicate of a processed event skips its effects and is acked; a locked
// one is left for retry; a transient failure releases the claim and is
// retried with backoff until max_attempts, then dead-lettered by the broker;
// a poison one is dead-lettered at once.
package consumer

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/idemcheck/idemcheck/impl/contract/broker"
	"github.com/idemcheck/idemcheck/impl/contract/clock"
	"github.com/idemcheck/idemcheck/impl/contract/event"
	"github.com/idemcheck/idemcheck/impl/contract/store"
	"github.com/idemcheck/idemcheck/impl/reference/producer"
)

// ResultKind classifies a handler's result.
type ResultKind string

const (
	OK        ResultKind = "ok"
	Transient ResultKind = "transient"
	Poison    ResultKind = "poison"
)

// Result is what a handler returns.
type Result struct {
	Kind   ResultKind
	Reason string // for failures: becomes last_error
}

// Handler applies an event's effects inside the unit of work tx.
type Handler func(tx store.Tx, consumer string, ev event.OrderPaid) Result

// Credit is the ledger handler: one ledger entry per OrderPaid.
func Credit(tx store.Tx, consumer string, ev event.OrderPaid) Result {
	tx.Credit(store.Entry{Consumer: consumer, EventID: ev.EventID, OrderID: ev.OrderID, UserID: ev.UserID, AmountCents: ev.AmountCents})
	return Result{Kind: OK}
}

// Deps are what a worker works with.
type Deps struct {
	Store    store.Store
	Broker   broker.Broker
	Producer *producer.Producer
	Node     *clock.Node
	Handler  Handler
	// Decode parses a delivered payload; nil means event.DecodeOrderPaid.
	// The runner gives a memo of it: the same few payloads are delivered
	// again and again in a run, and decoding is not what is checked.
	Decode func([]byte) (event.OrderPaid, error)
}

// Config of a worker.
type Config struct {
	Name     string
	Consumer string // consumer group and dedupe scope
	LeaseMs  int64
}

// Report says what one step did. Exactly the fields of its Action are set.
type Report struct {
	Action  Action
	Key     store.Key
	Claim   *store.Claim
	Token   uint64
	Handler *Result
	Commit  *store.CommitResult
	// Err is the error a store or broker call returned, as text.
	Err string
	// Stale is true when a commit or fail was refused for a stale token.
	Stale bool
	// Removed lists the keys a cleanup deleted.
	Removed []store.Key
}

// Action names a pipeline step.
type Action string

const (
	ActClaim      Action = "claim"
	ActHandle     Action = "handle"
	ActCommit     Action = "commit"
	ActEffect     Action = "commit-effect"
	ActAck        Action = "ack"
	ActNack       Action = "nack"
	ActFail       Action = "fail-claim"
	ActDeadLetter Action = "dead-letter"
	ActMark       Action = "mark-processed"
	ActCheck      Action = "check"
	ActDrop       Action = "drop"
)

// Stage is one pipeline step: it acts and says which stage comes next (nil:
// the worker is idle again). Stages keep the state of a delivery in the
// Worker, never in the closure, so that a worker can be copied mid-delivery.
type Stage func(ctx context.Context, w *Worker) (Stage, Report, error)

// Pipeline is a consumer implementation: the stage a received delivery
// starts at. The reference is Reference; other pipelines (the mutants in
// impl/mutant) are composed from the same stages and stages of their own.
type Pipeline struct {
	Name  string
	Start Stage
	// Janitor runs the retention job; nil means the reference janitor, which
	// leaves the cutoff to the store's own clock.
	Janitor func(ctx context.Context, w *Worker, retentionMs int64) ([]store.Key, error)
}

// Reference is the reference pipeline:
// claim → handle in a unit of work → commit effect and mark → ack.
func Reference() Pipeline {
	return Pipeline{Name: "reference", Start: ClaimThen(HandleThen(Commit))}
}

// Worker is one consumer process.
type Worker struct {
	cfg      Config
	deps     Deps
	pipeline Pipeline
	metrics  Metrics

	// In-flight state, lost on a crash.
	delivery  *broker.Delivery
	ev        event.OrderPaid
	key       store.Key
	token     uint64
	tx        store.Tx
	result    Result
	next      Stage
	startedMs int64
	staged    []store.Entry      // a handler run outside any unit of work (RunHandlerOutsideUnit)
	memory    map[store.Key]bool // process memory: lost on a crash
	trail     uint64             // the actions taken since the delivery was received, folded (Trail)
}

// NewWorker returns an idle worker.
func NewWorker(cfg Config, deps Deps, p Pipeline) *Worker {
	if deps.Handler == nil {
		deps.Handler = Credit
	}
	if deps.Decode == nil {
		deps.Decode = event.DecodeOrderPaid
	}
	return &Worker{cfg: cfg, deps: deps, pipeline: p, metrics: newMetrics()}
}

// Name returns the worker's name.
func (w *Worker) Name() string { return w.cfg.Name }

// Consumer returns the worker's consumer group.
func (w *Worker) Consumer() string { return w.cfg.Consumer }

// Node returns the worker's node clock.
func (w *Worker) Node() *clock.Node { return w.deps.Node }

// Idle reports whether the worker holds no delivery.
func (w *Worker) Idle() bool { return w.delivery == nil }

// Delivery returns the delivery the worker holds, if any.
func (w *Worker) Delivery() (broker.Delivery, bool) {
	if w.delivery == nil {
		return broker.Delivery{}, false
	}
	return *w.delivery, true
}

// Held returns the key and fencing token of the claim the worker holds (a
// zero token when it holds none).
func (w *Worker) Held() (store.Key, uint64) { return w.key, w.token }

// Metrics returns a copy of the worker's metrics.
func (w *Worker) Metrics() Metrics { return w.metrics.clone() }

// Receive hands the worker a delivery. A payload that does not decode is
// poison: the worker will dead-letter it.
func (w *Worker) Receive(d broker.Delivery) error {
	if w.delivery != nil {
		return fmt.Errorf("worker %s is busy", w.cfg.Name)
	}
	w.delivery = &d
	w.trail = 1
	w.startedMs = w.deps.Node.MonotonicMs()
	ev, err := w.deps.Decode(d.Message.Payload)
	if err != nil {
		w.result = Result{Kind: Poison, Reason: err.Error()}
		w.next = DeadLetter
		return nil
	}
	w.ev = ev
	w.key = store.Key{Tenant: d.Message.Tenant, Consumer: w.cfg.Consumer, ID: d.Message.Key}
	w.next = w.pipeline.Start
	return nil
}

// Step performs the worker's next pipeline step.
func (w *Worker) Step(ctx context.Context) (Report, error) {
	if w.next == nil {
		return Report{}, errors.New("worker is idle")
	}
	next, rep, err := w.next(ctx, w)
	if rep.Key == (store.Key{}) {
		rep.Key = w.key
	}
	if err != nil {
		rep.Err = err.Error()
	}
	w.next = next
	w.trail = foldTrail(w.trail, rep)
	if next == nil {
		w.finish()
	}
	return rep, err
}

// foldTrail folds a step's action and outcome into a trail (FNV-1a).
func foldTrail(h uint64, rep Report) uint64 {
	const prime = 1099511628211
	for i := 0; i < len(rep.Action); i++ {
		h = (h ^ uint64(rep.Action[i])) * prime
	}
	h = (h ^ uint64(len(rep.Action))) * prime
	if rep.Claim != nil {
		for i := 0; i < len(rep.Claim.Outcome); i++ {
			h = (h ^ uint64(rep.Claim.Outcome[i])) * prime
		}
	}
	if rep.Handler != nil {
		for i := 0; i < len(rep.Handler.Kind); i++ {
			h = (h ^ uint64(rep.Handler.Kind[i])) * prime
		}
	}
	if rep.Stale {
		h = (h ^ 0xff) * prime
	}
	if rep.Err != "" {
		h = (h ^ 0xfe) * prime
	}
	return h
}

// Clone returns a copy of the worker over other parts (deps), for a search
// that forks a run: its delivery, claim, stage, trail, process memory and
// metrics. cloneTx copies an open unit of work onto the new store; Clone
// reports false when it cannot.
func (w *Worker) Clone(deps Deps, cloneTx func(store.Tx) (store.Tx, bool)) (*Worker, bool) {
	c := *w
	c.deps = deps
	if deps.Handler == nil {
		c.deps.Handler = Credit
	}
	if deps.Decode == nil {
		c.deps.Decode = event.DecodeOrderPaid
	}
	c.metrics = w.metrics.clone()
	if w.delivery != nil {
		d := *w.delivery
		c.delivery = &d
	}
	if w.tx != nil {
		tx, ok := cloneTx(w.tx)
		if !ok {
			return nil, false
		}
		c.tx = tx
	}
	c.staged = slices.Clone(w.staged)
	c.memory = maps.Clone(w.memory)
	return &c, true
}

// Trail identifies how far the worker is through its delivery: the actions
// its steps took since it received it and their outcomes, folded into one
// number (0 when idle). Stages keep no state of their own, so the
// delivery, the claim held, the handler's result and the trail determine
// what the worker does next: a model checker fingerprints a worker by them.
func (w *Worker) Trail() uint64 { return w.trail }

// EachRemembered calls f with every key in the worker's process memory (see
// Memory), in no particular order.
func (w *Worker) EachRemembered(f func(store.Key)) {
	for k := range w.memory {
		f(k)
	}
}

// finish returns the worker to idle after a delivery is settled or dropped.
func (w *Worker) finish() {
	if w.delivery != nil {
		w.metrics.ProcessingMs += w.deps.Node.MonotonicMs() - w.startedMs
	}
	w.delivery, w.tx, w.token, w.next, w.staged, w.trail = nil, nil, 0, nil, nil, 0
	w.key, w.ev, w.result = store.Key{}, event.OrderPaid{}, Result{}
}

// Crash kills the worker where it stands: its open unit of work dies with it
// (a SQL store loses the connection mid-transaction), its delivery is never
// acked (the broker redelivers after the ack timeout), and it restarts idle.
func (w *Worker) Crash(ctx context.Context) {
	if w.tx != nil {
		if c, ok := w.tx.(store.Crasher); ok {
			c.Crash()
		} else {
			_ = w.tx.Rollback(ctx)
		}
	}
	w.delivery = nil
	w.finish()
	w.memory = nil
	w.metrics.Crashes++
}

// Cleanup runs the retention job from this worker's node.
func (w *Worker) Cleanup(ctx context.Context, retentionMs int64) ([]store.Key, error) {
	if w.pipeline.Janitor != nil {
		return w.pipeline.Janitor(ctx, w, retentionMs)
	}
	// The cutoff is the store's business, by the store's clock: this node's
	// wall clock may be minutes off.
	return w.deps.Store.Cleanup(ctx, retentionMs)
}

// ClaimThen claims the key and goes on to acquired when the claim is won; a
// processed key is acked as a duplicate, a locked one nacked for retry.
func ClaimThen(acquired Stage) Stage {
	return func(ctx context.Context, w *Worker) (Stage, Report, error) {
		return claim(ctx, w, acquired)
	}
}

func claim(ctx context.Context, w *Worker, acquired Stage) (Stage, Report, error) {
	c, err := w.deps.Store.Claim(ctx, w.key, w.cfg.LeaseMs)
	rep := Report{Action: ActClaim, Claim: &c}
	if err != nil {
		// The claim's fate is unknown: leave the delivery unacked so the
		// broker redelivers it; the lease frees any claim that did land.
		w.metrics.retry("store_error")
		return nil, rep, err
	}
	switch c.Outcome {
	case store.Acquired:
		w.token = c.Token
		return acquired, rep, nil
	case store.AlreadyProcessed:
		w.metrics.Dedup++
		return Ack, rep, nil
	default:
		w.result = Result{Kind: Transient, Reason: "locked"}
		return Nack, rep, nil
	}
}

// HandleThen runs the handler inside a unit of work and goes on to commit
// when it succeeds; a failure releases the claim (Fail).
func HandleThen(commit Stage) Stage {
	return func(ctx context.Context, w *Worker) (Stage, Report, error) {
		return Handle(ctx, w, commit)
	}
}

// Handle is HandleThen's step, for pipelines that decide afterwards.
func Handle(ctx context.Context, w *Worker, commit Stage) (Stage, Report, error) {
	tx, err := w.deps.Store.Begin(ctx, w.key, w.token)
	if err != nil {
		w.result = Result{Kind: Transient, Reason: "begin: " + err.Error()}
		return Fail, Report{Action: ActHandle, Token: w.token}, err
	}
	w.tx = tx
	res := w.deps.Handler(tx, w.cfg.Consumer, w.ev)
	w.result = res
	rep := Report{Action: ActHandle, Token: w.token, Handler: &res}
	switch res.Kind {
	case OK:
		return commit, rep, nil
	default:
		// Whatever the handler staged before failing is discarded.
		_ = tx.Rollback(ctx)
		w.tx = nil
		return Fail, rep, nil
	}
}

// Commit commits the unit of work — effect and processed mark together,
// after the store's fencing check — and goes on to ack. A store whose unit
// cannot commit atomically (store.SplitTx) is committed in two steps.
func Commit(ctx context.Context, w *Worker) (Stage, Report, error) {
	if split, ok := w.tx.(store.SplitTx); ok {
		return splitEffect(ctx, w, split)
	}
	res, err := w.tx.Commit(ctx)
	w.tx = nil
	rep := Report{Action: ActCommit, Token: w.token, Commit: &res}
	if err != nil {
		if w.refused(err, &rep) {
			return nil, rep, nil
		}
		w.result = Result{Kind: Transient, Reason: "commit: " + err.Error()}
		return Fail, rep, err
	}
	w.metrics.Processed++
	return Ack, rep, nil
}

// refused reports whether err refuses a store call because the worker no
// longer holds the claim (see fenced), and marks rep so. The refusal is
// the answer, not a failure: its words are kept. A newer holder owns the
// key: this worker's work is void, and the caller drops the delivery
// without ack; the holder settles the message.
func (w *Worker) refused(err error, rep *Report) bool {
	rep.Stale = fenced(err)
	if rep.Stale {
		rep.Err = err.Error()
		w.metrics.retry("stale_token")
	}
	return rep.Stale
}

// fenced reports whether a store call was refused because this worker no
// longer holds the claim: its token is stale, or nobody holds it any more.
func fenced(err error) bool {
	return errors.Is(err, store.ErrStaleToken) || errors.Is(err, store.ErrNotHeld)
}

// Fail releases the claim after a failure so the key can be claimed at
// once by the next delivery, then goes on to nack or dead-letter.
func Fail(ctx context.Context, w *Worker) (Stage, Report, error) {
	err := w.deps.Store.Fail(ctx, w.key, w.token, w.result.Reason)
	rep := Report{Action: ActFail, Token: w.token}
	if err != nil {
		if w.refused(err, &rep) {
			return nil, rep, nil
		}
		// Lease expiry will free the claim; still report the delivery's failure.
	}
	if w.result.Kind == Poison {
		return DeadLetter, rep, err
	}
	return Nack, rep, err
}

// Nack nacks the delivery with the result's reason, for the broker to retry.
func Nack(_ context.Context, w *Worker) (Stage, Report, error) {
	w.deps.Broker.Nack(*w.delivery, w.result.Reason)
	w.metrics.retry(w.result.Reason)
	res := w.result // the worker's own copy is cleared when it goes idle
	return nil, Report{Action: ActNack, Handler: &res}, nil
}

// DeadLetter publishes to the DLQ through the producer gate, so a crash
// between it and the ack cannot dead-letter the message twice, then acks.
func DeadLetter(_ context.Context, w *Worker) (Stage, Report, error) {
	w.deps.Producer.PublishDLQ(*w.delivery, w.result.Reason)
	w.metrics.dlq(w.result.Reason)
	res := w.result
	return Ack, Report{Action: ActDeadLetter, Handler: &res}, nil
}

// Ack settles the delivery.
func Ack(_ context.Context, w *Worker) (Stage, Report, error) {
	w.deps.Broker.Ack(*w.delivery)
	return nil, Report{Action: ActAck}, nil
}

// splitEffect is the first half of a commit on a store that cannot commit
// atomically: the effect lands now, the mark in the next step.
func splitEffect(ctx context.Context, w *Worker, tx store.SplitTx) (Stage, Report, error) {
	res, err := tx.CommitEffect(ctx)
	rep := Report{Action: ActEffect, Token: w.token, Commit: &res}
	if err != nil {
		w.tx = nil
		if w.refused(err, &rep) {
			return nil, rep, nil
		}
		w.result = Result{Kind: Transient, Reason: "commit: " + err.Error()}
		return Fail, rep, err
	}
	return splitMark, rep, nil
}

func splitMark(ctx context.Context, w *Worker) (Stage, Report, error) {
	tx := w.tx.(store.SplitTx)
	w.tx = nil
	err := tx.CommitMark(ctx)
	rep := Report{Action: ActMark, Token: w.token}
	if err != nil {
		rep.Stale = fenced(err)
		return nil, rep, err
	}
	w.metrics.Processed++
	return Ack, rep, nil
}
