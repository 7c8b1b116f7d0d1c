package consumer

import (
	"context"
	"errors"

	"github.com/idemcheck/idemcheck/impl/memstore"
	"github.com/idemcheck/idemcheck/impl/store"
)

// The mutant pipelines below are realistic consumer bugs, each named after
// itself. They are written against memstore's raw tables, the way naive code
// is written against a database, and so need a store with raw access.

type rawAccess interface{ Raw() memstore.Raw }

var errNoRaw = errors.New("this mutant pipeline needs a store with raw table access (memstore)")

func raw(w *Worker) (memstore.Raw, error) {
	r, ok := w.deps.Store.(rawAccess)
	if !ok {
		return memstore.Raw{}, errNoRaw
	}
	return r.Raw(), nil
}

// bufferTx collects the handler's staged entries for pipelines that write
// them outside the contract's unit of work.
type bufferTx struct{ entries []store.Entry }

func (b *bufferTx) Credit(e store.Entry) { b.entries = append(b.entries, e) }
func (b *bufferTx) Commit(context.Context) (store.CommitResult, error) {
	return store.CommitResult{}, errors.New("bufferTx is written by the pipeline, not committed")
}
func (b *bufferTx) Rollback(context.Context) error { b.entries = nil; return nil }

// bufferThen runs the handler into a buffer (no unit of work) and goes on to
// next with the buffer, or to the usual failure handling.
func bufferThen(next func(buf *bufferTx) stage) stage {
	return func(ctx context.Context, w *Worker) (stage, Report, error) {
		buf := &bufferTx{}
		res := w.deps.Handler(buf, w.cfg.Consumer, w.ev)
		w.result = res
		rep := Report{Action: ActHandle, Token: w.token, Handler: &res}
		switch res.Kind {
		case OK:
			return next(buf), rep, nil
		case Poison:
			return deadLetterStage, rep, nil
		default:
			return nackStage, rep, nil
		}
	}
}

// rawCredit inserts the buffered entries one statement at a time.
func rawCredit(w *Worker, buf *bufferTx) (store.CommitResult, error) {
	r, err := raw(w)
	if err != nil {
		return store.CommitResult{}, err
	}
	var res store.CommitResult
	for _, e := range buf.entries {
		if r.Credit(e) {
			res.Credited++
		} else {
			res.DuplicatesIgnored++
		}
	}
	return res, nil
}

// NoDedup is a consumer that never consults the claim store: it inserts the
// ledger row and acks. Only the ledger's unique constraint stands between a
// duplicate and a second credit, and no processed record is ever written.
func NoDedup() Pipeline {
	return Pipeline{Name: "no-dedup", start: bufferThen(func(buf *bufferTx) stage {
		return func(_ context.Context, w *Worker) (stage, Report, error) {
			res, err := rawCredit(w, buf)
			w.metrics.Processed++
			return ackStage, Report{Action: ActCommit, Commit: &res}, err
		}
	})}
}

// CheckThenAct claims in two statements — read the record, then overwrite it
// with "processing" — and commits with an UPDATE that trusts the claim. Two
// workers that both read "absent" both process the event.
func CheckThenAct() Pipeline {
	act := func(_ context.Context, w *Worker) (stage, Report, error) {
		r, err := raw(w)
		if err != nil {
			return nil, Report{Action: ActClaim}, err
		}
		w.token = r.PutProcessing(w.key, w.cfg.LeaseMs)
		c := store.Claim{Outcome: store.Acquired, Token: w.token}
		return bufferThen(unfencedCommit), Report{Action: ActClaim, Claim: &c}, nil
	}
	check := func(ctx context.Context, w *Worker) (stage, Report, error) {
		rec, found, err := w.deps.Store.Get(ctx, w.key)
		if err != nil {
			return nil, Report{Action: ActCheck}, err
		}
		now, err := w.deps.Store.NowMs(ctx)
		if err != nil {
			return nil, Report{Action: ActCheck}, err
		}
		switch {
		case found && rec.State == store.Processed:
			w.metrics.Dedup++
			return ackStage, Report{Action: ActCheck}, nil
		case found && rec.State == store.Processing && now < rec.LeaseUntilMs:
			w.result = Result{Kind: Transient, Reason: "locked"}
			return nackStage, Report{Action: ActCheck}, nil
		}
		return act, Report{Action: ActCheck}, nil
	}
	return Pipeline{Name: "check-then-act-claim", start: check}
}

// unfencedCommit writes the effect and the mark without checking the token.
func unfencedCommit(buf *bufferTx) stage {
	return func(_ context.Context, w *Worker) (stage, Report, error) {
		res, err := rawCredit(w, buf)
		if err == nil {
			r, _ := raw(w)
			r.MarkProcessed(w.key)
			w.metrics.Processed++
		}
		return ackStage, Report{Action: ActCommit, Token: w.token, Commit: &res}, err
	}
}

// MarkBeforeEffect marks the key processed in its own commit before running
// the effect outside any transaction: a crash in between loses the effect,
// and every redelivery is skipped as a duplicate.
func MarkBeforeEffect() Pipeline {
	mark := func(_ context.Context, w *Worker) (stage, Report, error) {
		r, err := raw(w)
		if err != nil {
			return nil, Report{Action: ActMark}, err
		}
		r.MarkProcessed(w.key)
		return bufferThen(func(buf *bufferTx) stage {
			return func(_ context.Context, w *Worker) (stage, Report, error) {
				res, err := rawCredit(w, buf)
				w.metrics.Processed++
				return ackStage, Report{Action: ActCommit, Token: w.token, Commit: &res}, err
			}
		}), Report{Action: ActMark, Token: w.token}, nil
	}
	return Pipeline{Name: "mark-before-effect", start: claimThen(mark)}
}

// SeparateCommits commits the effect in one transaction and the processed
// mark in a second: a crash between them leaves the effect without its mark,
// and the redelivery credits again once the lease is taken over.
func SeparateCommits() Pipeline {
	return Pipeline{Name: "effect-and-mark-separate-commits", start: claimThen(bufferThen(func(buf *bufferTx) stage {
		return func(ctx context.Context, w *Worker) (stage, Report, error) {
			res, err := rawCredit(w, buf)
			rep := Report{Action: ActCommit, Token: w.token, Commit: &res}
			if err != nil {
				return nil, rep, err
			}
			return markFenced, rep, nil
		}
	}))}
}

// markFenced commits an empty unit of work: the mark alone, token checked.
func markFenced(ctx context.Context, w *Worker) (stage, Report, error) {
	tx, err := w.deps.Store.Begin(ctx, w.key, w.token)
	if err != nil {
		return nil, Report{Action: ActMark, Token: w.token}, err
	}
	res, err := tx.Commit(ctx)
	rep := Report{Action: ActMark, Token: w.token, Commit: &res}
	if err != nil {
		rep.Stale = true
		return nil, rep, nil
	}
	w.metrics.Processed++
	return ackStage, rep, nil
}

// NoReleaseOnFailure nacks a transient failure without failing or releasing
// the claim. Paired with a store whose claims have no lease, the key stays
// "processing" forever and the event never settles.
func NoReleaseOnFailure() Pipeline {
	return Pipeline{Name: "claim-left-in-processing", start: claimThen(func(ctx context.Context, w *Worker) (stage, Report, error) {
		next, rep, err := handle(ctx, w, commitStage)
		if w.result.Kind == Transient && err == nil {
			next = nackStage
		}
		return next, rep, err
	})}
}

// UnfencedTakeover commits effect and mark with an UPDATE that does not
// compare fencing tokens: a slow worker whose lease was taken over still
// commits, and the event is credited by both holders.
func UnfencedTakeover() Pipeline {
	return Pipeline{Name: "takeover-without-fencing", start: claimThen(bufferThen(unfencedCommit))}
}

// InMemoryDedupe dedupes with a set in process memory and appends to a ledger
// with no unique constraint: another worker, a restart, or a replay of the
// stream credits the event again.
func InMemoryDedupe() Pipeline {
	check := func(_ context.Context, w *Worker) (stage, Report, error) {
		if w.memory[w.key] {
			w.metrics.Dedup++
			return ackStage, Report{Action: ActCheck}, nil
		}
		return bufferThen(func(buf *bufferTx) stage {
			return func(_ context.Context, w *Worker) (stage, Report, error) {
				r, err := raw(w)
				if err != nil {
					return nil, Report{Action: ActCommit}, err
				}
				for _, e := range buf.entries {
					r.Append(e)
				}
				r.MarkProcessed(w.key)
				w.memory[w.key] = true
				w.metrics.Processed++
				res := store.CommitResult{Credited: len(buf.entries)}
				return ackStage, Report{Action: ActCommit, Commit: &res}, nil
			}
		}), Report{Action: ActCheck}, nil
	}
	reset := func(w *Worker) { w.memory = map[store.Key]bool{} }
	return Pipeline{Name: "dedupe-in-memory-only", start: func(ctx context.Context, w *Worker) (stage, Report, error) {
		if w.memory == nil {
			reset(w)
		}
		return check(ctx, w)
	}, onCrash: reset}
}

// SkewedCleanup is the reference consumer whose retention job computes its
// cutoff from the worker's own wall clock. A node minutes ahead deletes
// records still inside the redelivery window, and a late duplicate is
// credited again.
func SkewedCleanup() Pipeline {
	p := Reference()
	p.Name = "cleanup-by-local-clock"
	p.janitor = func(_ context.Context, w *Worker, retentionMs int64) ([]store.Key, error) {
		r, err := raw(w)
		if err != nil {
			return nil, err
		}
		return r.DeleteProcessedBefore(w.deps.Node.NowMs() - retentionMs), nil
	}
	return p
}
