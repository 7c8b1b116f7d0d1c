package storetest

import (
	"github.com/idemcheck/idemcheck/impl/contract/store"
)

// checkCommitLandsEffectAndMark: a commit lands every staged entry, field
// for field, and marks the record processed at the store's time of the
// commit. Catches finishedAt taken from the claim or another clock, a lease
// left on a settled record, and entries truncated or dropped.
func checkCommitLandsEffectAndMark(e *env) {
	k := key("e1")
	c := e.acquire(k)
	took := e.briefly(7)
	e.advance(took)
	credit, fee := entry("ledger", "e1", 100), entry("ledger", "e1-fee", -250)
	res := e.mustCommit(k, c.Token, credit, fee)
	e.equal("commit result", res, store.CommitResult{Credited: 2, AtMs: startMs + took})
	r := e.mustGet(k)
	r.LastError = "" // what a processed record keeps of a last error is left open
	e.equal("record after commit", r, store.Record{
		Key: k, State: store.Processed, StartedAtMs: startMs, FinishedAtMs: startMs + took, Attempts: 1, Token: c.Token,
	})
	e.equal("ledger after commit", e.ledger(), []store.Entry{credit, fee})
}

// checkStaleCommitChangesNothing: a unit of work opened under a lease that
// was then taken over commits nothing — no entry, no mark — and says
// ErrStaleToken; once the new holder settled the key, ErrNotHeld. Catches a
// missing fencing check, a check made at Begin (a snapshot from before the
// takeover), and effects inserted before the check.
func checkStaleCommitChangesNothing(e *env) {
	k := key("e1")
	a := e.acquire(k)
	txA := e.begin(k, a.Token, entry("ledger", "e1", 100), entry("ledger", "e1-stale-only", 1))
	e.advance(e.hold())
	b := e.acquire(k)
	txB := e.begin(k, b.Token, entry("ledger", "e1", 200))
	before := e.snapshot()
	_, err := txA.Commit(e.ctx)
	e.wantErr("commit by the holder whose lease was taken over", err, store.ErrStaleToken)
	e.unchanged("a stale commit", before)
	// Had the stale commit slipped its entry in, the new holder's insert
	// would come back as a duplicate here.
	res, err := txB.Commit(e.ctx)
	if err != nil {
		e.t.Fatalf("commit by the current holder: %v", err)
	}
	e.equal("current holder's commit", res, store.CommitResult{Credited: 1, AtMs: e.now()})
	e.equal("ledger", e.ledger(), []store.Entry{entry("ledger", "e1", 200)})
	before = e.snapshot()
	_, err = e.commit(k, a.Token, entry("ledger", "e1-late", 1))
	e.wantErr("stale commit after the key was settled", err, store.ErrNotHeld)
	e.unchanged("a stale commit after settlement", before)
}

// checkCommitRequiresHeldClaim: a commit lands only on a record in
// processing: never claimed, failed, or already processed all answer
// ErrNotHeld and change nothing. Catches a mark that creates a missing
// record (a processed mark with no claim) and a second commit of one claim.
func checkCommitRequiresHeldClaim(e *env) {
	never := key("never-claimed")
	before := e.snapshot()
	_, err := e.commit(never, 1, entry("ledger", "never", 1))
	e.wantErr("commit of a never claimed key", err, store.ErrNotHeld)
	e.unchanged("a commit of a never claimed key", before)

	if !e.keepsMark() { // declared kept: a failed attempt's token holds until its lease ends
		failed := key("failed")
		c := e.acquire(failed)
		if err := e.fail(failed, c.Token, "transient"); err != nil {
			e.t.Fatalf("Fail: %v", err)
		}
		before = e.snapshot()
		_, err = e.commit(failed, c.Token, entry("ledger", "failed", 1))
		e.wantErr("commit of a failed claim", err, store.ErrNotHeld)
		e.unchanged("a commit of a failed claim", before)
	}

	done := key("done")
	c := e.settle(done, entry("ledger", "done", 1))
	before = e.snapshot()
	_, err = e.commit(done, c.Token, entry("ledger", "done-again", 1))
	e.wantErr("second commit of a settled claim", err, store.ErrNotHeld)
	e.unchanged("a second commit of a settled claim", before)
}

// checkLedgerUniquePerConsumerEvent: the ledger is unique on (Consumer,
// EventID): a second insert of a pair is ignored, counted in
// DuplicatesIgnored, keeps the first entry, and does not fail the commit;
// the same event under another consumer is a different row. Catches a
// ledger without the constraint, one unique on the event alone, and a
// duplicate that overwrites or aborts the commit.
func checkLedgerUniquePerConsumerEvent(e *env) {
	first := entry("ledger", "e1", 100)
	c := e.acquire(key("e1"))
	e.equal("first insert", e.mustCommit(key("e1"), c.Token, first), store.CommitResult{Credited: 1, AtMs: e.now()})

	// Another operation (say a replay under a new idempotency key) credits
	// the same event again.
	replay := key("e1-replayed")
	c = e.acquire(replay)
	again := first
	again.AmountCents = 999
	e.equal("duplicate insert", e.mustCommit(replay, c.Token, again), store.CommitResult{DuplicatesIgnored: 1, AtMs: e.now()})
	if r := e.mustGet(replay); r.State != store.Processed {
		e.t.Errorf("a commit whose only insert was a duplicate left the record %s, want processed", r.State)
	}

	other := store.Key{Tenant: "t1", Consumer: "email", ID: "e1"}
	c = e.acquire(other)
	e.equal("same event under another consumer", e.mustCommit(other, c.Token, entry("email", "e1", 100)), store.CommitResult{Credited: 1, AtMs: e.now()})

	twice := key("e2")
	c = e.acquire(twice)
	e.equal("one unit crediting an event twice", e.mustCommit(twice, c.Token, entry("ledger", "e2", 5), entry("ledger", "e2", 6)),
		store.CommitResult{Credited: 1, DuplicatesIgnored: 1, AtMs: e.now()})

	e.equal("ledger", e.ledger(), []store.Entry{entry("email", "e1", 100), first, entry("ledger", "e2", 5)})
}

// checkRollbackLandsNothing: Rollback discards the staged entries and
// leaves the claim held, so a new unit of work under the same token can
// still commit — only its own entries. Rollback is safe to repeat and after
// Commit, and undoes nothing then. Catches a rollback that applies or
// keeps the staged work, and a rollback that releases the claim.
func checkRollbackLandsNothing(e *env) {
	k := key("e1")
	c := e.acquire(k)
	before := e.snapshot()
	tx := e.begin(k, c.Token, entry("ledger", "rolled-back", 100))
	if err := tx.Rollback(e.ctx); err != nil {
		e.t.Fatalf("Rollback: %v", err)
	}
	if err := tx.Rollback(e.ctx); err != nil {
		e.t.Errorf("second Rollback: %v", err)
	}
	e.unchanged("a rolled back unit of work", before)
	if _, err := tx.Commit(e.ctx); err == nil {
		e.t.Errorf("Commit after Rollback succeeded")
	}
	e.unchanged("Commit after Rollback", before)

	tx = e.begin(k, c.Token, entry("ledger", "e1", 100))
	res, err := tx.Commit(e.ctx)
	if err != nil {
		e.t.Fatalf("commit after an earlier rollback: %v", err)
	}
	e.equal("commit after an earlier rollback", res, store.CommitResult{Credited: 1, AtMs: e.now()})
	after := e.snapshot()
	e.equal("ledger", after.Ledger, []store.Entry{entry("ledger", "e1", 100)})
	if err := tx.Rollback(e.ctx); err != nil {
		e.t.Errorf("Rollback after Commit: %v", err)
	}
	e.unchanged("Rollback after Commit", after)
}

// checkCommitAfterLeaseRanOut: a holder whose lease ran out while nobody
// took the key over still commits — unless declared otherwise: under
// LateCommitRefused its commit is refused (ErrStaleToken), changes nothing,
// and leaves the record in processing for the next claim to take over;
// where the record is gone once its hold ended (an expired lease that
// vanishes, the record's own expiry, a mark with no lease) there is no
// claim left to commit under (ErrNotHeld). Catches a late commit landing
// under a declared refusal, a commit landing on a record its own expiry
// removed, and a refusal that drops the record.
func checkCommitAfterLeaseRanOut(e *env) {
	k := key("e1")
	c := e.acquire(k)
	e.advance(e.hold())
	before := e.snapshot()
	res, err := e.commit(k, c.Token, entry("ledger", "e1", 100))
	switch {
	case e.goneAfterHold():
		e.wantErr("commit once the record was gone", err, store.ErrNotHeld)
		e.unchanged("a commit once the record was gone", before)
	case e.conv.LateCommit == store.LateCommitRefused:
		e.wantErr("commit after the lease ran out", err, store.ErrStaleToken)
		e.unchanged("a refused late commit", before)
		next := e.claim(k)
		e.equal("claim after a refused late commit", next, store.Claim{Outcome: store.Acquired, Token: next.Token, Attempt: 2, Takeover: true, AtMs: e.now()})
	default:
		if err != nil {
			e.t.Fatalf("commit after the lease ran out, nobody having taken over: %v", err)
		}
		e.equal("late commit", res, store.CommitResult{Credited: 1, AtMs: e.now()})
		r, ok := e.get(k)
		switch {
		case !ok && !e.conv.MayHaveExpired(e.conv.ExpiryStartMs(c.AtMs, e.now()), e.now()):
			e.t.Errorf("no record after a late commit, want it processed")
		case ok && r.State != store.Processed:
			e.t.Errorf("record after a late commit: %s, want processed", r.State)
		}
		// (An expiry counted from the claim may have passed already: the
		// result is then gone as soon as it landed.)
	}
}
