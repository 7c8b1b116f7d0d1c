package mutant

import (
	"context"
	"errors"

	"github.com/idemcheck/idemcheck/impl/contract/store"
	"github.com/idemcheck/idemcheck/impl/reference/consumer"
)

// The mutant consumers below are realistic consumer bugs. They are written
// the way naive code is written against a database: separate statements
// through store.Tables, no fencing, cutoffs computed by the caller.

var errNoTables = errors.New("this consumer writes its tables statement by statement and needs a store that implements store.Tables")

func tables(w *consumer.Worker) (store.Tables, error) {
	t, ok := w.Store().(store.Tables)
	if !ok {
		return nil, errNoTables
	}
	return t, nil
}

// handleOutsideUnitThen runs the handler with no unit of work and goes on to
// next, which writes what it credited; failures are nacked or dead-lettered
// without releasing anything.
func handleOutsideUnitThen(next consumer.Stage) consumer.Stage {
	return func(_ context.Context, w *consumer.Worker) (consumer.Stage, consumer.Report, error) {
		res := w.RunHandlerOutsideUnit()
		rep := consumer.Report{Action: consumer.ActHandle, Token: w.Token(), Handler: &res}
		switch res.Kind {
		case consumer.OK:
			return next, rep, nil
		case consumer.Poison:
			return consumer.DeadLetter, rep, nil
		default:
			return consumer.Nack, rep, nil
		}
	}
}

// insertStaged inserts what the handler credited, one statement per row.
func insertStaged(ctx context.Context, w *consumer.Worker) (store.CommitResult, error) {
	t, err := tables(w)
	if err != nil {
		return store.CommitResult{}, err
	}
	var res store.CommitResult
	for _, e := range w.Staged() {
		inserted, err := t.InsertEntry(ctx, e)
		switch {
		case err != nil:
			return res, err
		case inserted:
			res.Credited++
		default:
			res.DuplicatesIgnored++
		}
	}
	return res, nil
}

// NoDedup is a consumer that never consults the claim store: it inserts the
// ledger row and acks. Only the ledger's unique constraint stands between a
// duplicate and a second credit, and no processed record is ever written.
func NoDedup() consumer.Pipeline {
	insert := func(ctx context.Context, w *consumer.Worker) (consumer.Stage, consumer.Report, error) {
		res, err := insertStaged(ctx, w)
		w.CountProcessed()
		return consumer.Ack, consumer.Report{Action: consumer.ActCommit, Commit: &res}, err
	}
	return consumer.Pipeline{Name: "no-dedup", Start: handleOutsideUnitThen(insert)}
}

// CheckThenActClaim claims in two statements — read the record, then
// overwrite it with "processing" — and commits with statements that trust
// the claim. Two workers that both read "absent" both process the event.
func CheckThenActClaim() consumer.Pipeline {
	act := func(ctx context.Context, w *consumer.Worker) (consumer.Stage, consumer.Report, error) {
		t, err := tables(w)
		if err != nil {
			return nil, consumer.Report{Action: consumer.ActClaim}, err
		}
		token, err := t.PutProcessing(ctx, w.Key(), w.LeaseMs())
		if err != nil {
			return nil, consumer.Report{Action: consumer.ActClaim}, err
		}
		w.SetToken(token)
		c := store.Claim{Outcome: store.Acquired, Token: token}
		return handleOutsideUnitThen(unfencedCommit), consumer.Report{Action: consumer.ActClaim, Claim: &c}, nil
	}
	check := func(ctx context.Context, w *consumer.Worker) (consumer.Stage, consumer.Report, error) {
		rec, found, err := w.Store().Get(ctx, w.Key())
		if err != nil {
			return nil, consumer.Report{Action: consumer.ActCheck}, err
		}
		now, err := w.Store().NowMs(ctx)
		if err != nil {
			return nil, consumer.Report{Action: consumer.ActCheck}, err
		}
		switch {
		case found && rec.State == store.Processed:
			w.CountDedup()
			return consumer.Ack, consumer.Report{Action: consumer.ActCheck}, nil
		case found && rec.State == store.Processing && now < rec.LeaseUntilMs:
			w.SetResult(consumer.Result{Kind: consumer.Transient, Reason: "locked"})
			return consumer.Nack, consumer.Report{Action: consumer.ActCheck}, nil
		}
		return act, consumer.Report{Action: consumer.ActCheck}, nil
	}
	return consumer.Pipeline{Name: "check-then-act-claim", Start: check}
}

// unfencedCommit writes the effect and the mark without checking the token.
func unfencedCommit(ctx context.Context, w *consumer.Worker) (consumer.Stage, consumer.Report, error) {
	res, err := insertStaged(ctx, w)
	if err == nil {
		t, _ := tables(w)
		if err = t.MarkProcessed(ctx, w.Key()); err == nil {
			w.CountProcessed()
		}
	}
	return consumer.Ack, consumer.Report{Action: consumer.ActCommit, Token: w.Token(), Commit: &res}, err
}

// MarkBeforeEffect marks the key processed in its own statement before
// running the effect outside any transaction: a crash in between loses the
// effect, and every redelivery is skipped as a duplicate.
func MarkBeforeEffect() consumer.Pipeline {
	credit := func(ctx context.Context, w *consumer.Worker) (consumer.Stage, consumer.Report, error) {
		res, err := insertStaged(ctx, w)
		w.CountProcessed()
		return consumer.Ack, consumer.Report{Action: consumer.ActCommit, Token: w.Token(), Commit: &res}, err
	}
	mark := func(ctx context.Context, w *consumer.Worker) (consumer.Stage, consumer.Report, error) {
		t, err := tables(w)
		if err == nil {
			err = t.MarkProcessed(ctx, w.Key())
		}
		if err != nil {
			return nil, consumer.Report{Action: consumer.ActMark}, err
		}
		return handleOutsideUnitThen(credit), consumer.Report{Action: consumer.ActMark, Token: w.Token()}, nil
	}
	return consumer.Pipeline{Name: "mark-before-effect", Start: consumer.ClaimThen(mark)}
}

// EffectAndMarkSeparateCommits commits the effect in one transaction and the
// processed mark in a second: a crash between them leaves the effect without
// its mark, and the redelivery credits again once the lease is taken over.
func EffectAndMarkSeparateCommits() consumer.Pipeline {
	effect := func(ctx context.Context, w *consumer.Worker) (consumer.Stage, consumer.Report, error) {
		res, err := insertStaged(ctx, w)
		rep := consumer.Report{Action: consumer.ActCommit, Token: w.Token(), Commit: &res}
		if err != nil {
			return nil, rep, err
		}
		return markFenced, rep, nil
	}
	return consumer.Pipeline{Name: "effect-and-mark-separate-commits", Start: consumer.ClaimThen(handleOutsideUnitThen(effect))}
}

// markFenced commits an empty unit of work: the mark alone, token checked.
func markFenced(ctx context.Context, w *consumer.Worker) (consumer.Stage, consumer.Report, error) {
	tx, err := w.Store().Begin(ctx, w.Key(), w.Token())
	if err != nil {
		return nil, consumer.Report{Action: consumer.ActMark, Token: w.Token()}, err
	}
	res, err := tx.Commit(ctx)
	rep := consumer.Report{Action: consumer.ActMark, Token: w.Token(), Commit: &res}
	if err != nil {
		rep.Stale = true
		return nil, rep, nil
	}
	w.CountProcessed()
	return consumer.Ack, rep, nil
}

// ClaimLeftInProcessing nacks a transient failure without failing or
// releasing the claim. Paired with a store whose claims have no lease
// (NewClaimLeftInProcessingStore), the key stays "processing" forever and
// the event never settles.
func ClaimLeftInProcessing() consumer.Pipeline {
	handle := func(ctx context.Context, w *consumer.Worker) (consumer.Stage, consumer.Report, error) {
		next, rep, err := consumer.Handle(ctx, w, consumer.Commit)
		if w.Result().Kind == consumer.Transient && err == nil {
			next = consumer.Nack
		}
		return next, rep, err
	}
	return consumer.Pipeline{Name: "claim-left-in-processing", Start: consumer.ClaimThen(handle)}
}

// TakeoverWithoutFencing commits effect and mark with statements that do not
// compare fencing tokens: a slow worker whose lease was taken over still
// commits, and the event is credited by both holders.
func TakeoverWithoutFencing() consumer.Pipeline {
	return consumer.Pipeline{Name: "takeover-without-fencing", Start: consumer.ClaimThen(handleOutsideUnitThen(unfencedCommit))}
}

// appender is the ledger of NewDedupeInMemoryOnlyStore.
type appender interface {
	Append(ctx context.Context, e store.Entry) error
}

// DedupeInMemoryOnly dedupes with a set in process memory and appends to a
// ledger with no unique constraint (NewDedupeInMemoryOnlyStore): another
// worker, a restart, or a replay of the stream credits the event again.
func DedupeInMemoryOnly() consumer.Pipeline {
	write := func(ctx context.Context, w *consumer.Worker) (consumer.Stage, consumer.Report, error) {
		a, ok := w.Store().(appender)
		t, err := tables(w)
		if !ok || err != nil {
			return nil, consumer.Report{Action: consumer.ActCommit}, errors.Join(err, errors.New("dedupe-in-memory-only needs its own store, NewDedupeInMemoryOnlyStore"))
		}
		for _, e := range w.Staged() {
			if err := a.Append(ctx, e); err != nil {
				return nil, consumer.Report{Action: consumer.ActCommit}, err
			}
		}
		if err := t.MarkProcessed(ctx, w.Key()); err != nil {
			return nil, consumer.Report{Action: consumer.ActCommit}, err
		}
		w.Memory()[w.Key()] = true
		w.CountProcessed()
		res := store.CommitResult{Credited: len(w.Staged())}
		return consumer.Ack, consumer.Report{Action: consumer.ActCommit, Commit: &res}, nil
	}
	check := func(_ context.Context, w *consumer.Worker) (consumer.Stage, consumer.Report, error) {
		if w.Memory()[w.Key()] {
			w.CountDedup()
			return consumer.Ack, consumer.Report{Action: consumer.ActCheck}, nil
		}
		return handleOutsideUnitThen(write), consumer.Report{Action: consumer.ActCheck}, nil
	}
	return consumer.Pipeline{Name: "dedupe-in-memory-only", Start: check}
}

// CleanupByLocalClock is the reference consumer whose retention job computes
// its cutoff from the worker's own wall clock. A node minutes ahead deletes
// records still inside the redelivery window, and a late duplicate is
// credited again.
func CleanupByLocalClock() consumer.Pipeline {
	p := consumer.Reference()
	p.Name = "cleanup-by-local-clock"
	p.Janitor = func(ctx context.Context, w *consumer.Worker, retentionMs int64) ([]store.Key, error) {
		t, err := tables(w)
		if err != nil {
			return nil, err
		}
		return t.DeleteProcessedBefore(ctx, w.Node().NowMs()-retentionMs)
	}
	return p
}
