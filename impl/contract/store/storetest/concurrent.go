package storetest

import (
	"errors"
	"fmt"
	"sync"

	"github.com/idemcheck/idemcheck/impl/contract/store"
)

// workers is how many goroutines the concurrency checks run at once.
const workers = 8

// checkOpenUnitsOfWorkDoNotBlock: while units of work are open (begun, not
// yet committed), every other call proceeds. The deterministic runner steps
// all workers on one goroutine, so a call that waited for an open unit of
// work would wait for ever. Catches a Begin that takes a lock (a row lock,
// SQLite's write lock) instead of leaving it to Commit.
func checkOpenUnitsOfWorkDoNotBlock(e *env) {
	a, b, c := key("a"), key("b"), key("c")
	ca, cb := e.acquire(a), e.acquire(b)
	txA := e.begin(a, ca.Token, entry("ledger", "a", 1))
	txB := e.begin(b, cb.Token, entry("ledger", "b", 2))
	// Everything below runs while both units are open.
	cc := e.acquire(c)
	if got := e.claim(a); got.Outcome != e.busy() {
		e.t.Errorf("claim of a key with an open unit of work = %+v, want %s", got, e.busy())
	}
	e.get(a)
	e.snapshot()
	if _, err := e.s.NowMs(e.ctx); err != nil {
		e.t.Fatalf("NowMs: %v", err)
	}
	e.cleanup(retentionMs)
	if err := e.fail(c, cc.Token, "transient"); err != nil {
		e.t.Fatalf("Fail while units of work are open: %v", err)
	}
	e.begin(c, cc.Token).Rollback(e.ctx)
	for _, u := range []struct {
		name string
		tx   store.Tx
	}{{"b", txB}, {"a", txA}} {
		if _, err := u.tx.Commit(e.ctx); err != nil {
			e.t.Fatalf("commit of unit %s after the other calls: %v", u.name, err)
		}
	}
	e.equal("ledger", e.ledger(), []store.Entry{entry("ledger", "a", 1), entry("ledger", "b", 2)})
}

// parallel runs f(i) for i in [0, workers) on as many goroutines, released
// together so their calls overlap, and waits for all of them.
func parallel(f func(i int)) {
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range workers {
		wg.Go(func() {
			<-start
			f(i)
		})
	}
	close(start)
	wg.Wait()
}

// checkConcurrentClaimsOneWinner: goroutines claiming one key at once get
// exactly one Acquired, the rest Locked; after the lease runs out, the same
// again with one takeover. Catches a claim made of a separate read and
// write (check-then-act), which lets several goroutines acquire.
func checkConcurrentClaimsOneWinner(e *env) {
	k := key("contended")
	var last uint64
	for round, takeover := range []bool{false, true} {
		claims := make([]store.Claim, workers)
		errs := make([]error, workers)
		parallel(func(i int) { claims[i], errs[i] = e.s.Claim(e.ctx, k, leaseMs) })
		var won []store.Claim
		for i, c := range claims {
			switch {
			case errs[i] != nil:
				e.t.Errorf("round %d: concurrent claim: %v", round, errs[i])
			case c.Outcome == store.Acquired:
				won = append(won, c)
			case c.Outcome != e.busy():
				e.t.Errorf("round %d: concurrent claim = %+v, want acquired or %s", round, c, e.busy())
			}
		}
		if len(won) != 1 {
			e.t.Fatalf("round %d: %d of %d concurrent claims acquired the key, want exactly 1: %+v", round, len(won), workers, won)
		}
		w := won[0]
		attempt := round + 1
		if e.goneAfterHold() {
			// The record was gone once its hold ended: a fresh claim,
			// not a takeover.
			takeover, attempt = false, 1
		}
		if w.Takeover != takeover || w.Attempt != attempt || w.Token <= last {
			e.t.Errorf("round %d: winning claim %+v, want takeover=%v, attempt %d, token above %d", round, w, takeover, attempt, last)
		}
		last = w.Token
		if r := e.mustGet(k); r.Token != w.Token || r.Attempts != attempt {
			e.t.Errorf("round %d: record %+v, want the winner's token %d and %d attempts", round, r, w.Token, attempt)
		}
		e.advance(e.hold())
	}
}

// checkConcurrentCommitsAndTakeovers: holders of stale and current tokens
// commit while other goroutines try to take the key over, all at once.
// Whatever the interleaving: stale commits fail and land nothing, and
// either the current holder's commit lands (then no claim acquires) or one
// claim takes over (then that commit fails) — never both, never two
// takeovers. Catches a fencing check outside the commit's transaction, and
// a commit whose check and write are not atomic against a takeover.
func checkConcurrentCommitsAndTakeovers(e *env) {
	const holders = workers / 2
	for round := range 3 {
		k := key(fmt.Sprintf("round-%d", round))
		tokens := make([]uint64, holders)
		for i := range tokens {
			tokens[i] = e.acquire(k).Token
			e.advance(e.hold()) // every hold, the current one too, has now ended
		}
		current := tokens[holders-1]
		commitErrs := make([]error, holders)
		claims := make([]store.Claim, workers-holders)
		claimErrs := make([]error, workers-holders)
		parallel(func(i int) {
			if i < holders {
				tx, err := e.s.Begin(e.ctx, k, tokens[i])
				if err != nil {
					commitErrs[i] = err
					return
				}
				tx.Credit(store.Entry{Consumer: "ledger", EventID: k.ID, OrderID: fmt.Sprint("holder-", i), UserID: "u", AmountCents: 1})
				_, commitErrs[i] = tx.Commit(e.ctx)
				return
			}
			claims[i-holders], claimErrs[i-holders] = e.s.Claim(e.ctx, k, leaseMs)
		})
		for i, err := range commitErrs[:holders-1] {
			if !errors.Is(err, store.ErrStaleToken) && !errors.Is(err, store.ErrNotHeld) {
				e.t.Errorf("round %d: commit with stale token %d: error %v, want a stale or not-held refusal", round, tokens[i], err)
			}
		}
		var takeovers []store.Claim
		for i, c := range claims {
			switch {
			case claimErrs[i] != nil:
				e.t.Errorf("round %d: concurrent claim: %v", round, claimErrs[i])
			case c.Outcome == store.Acquired:
				takeovers = append(takeovers, c)
			}
		}
		committed := commitErrs[holders-1] == nil
		r := e.mustGet(k)
		l := e.ledger()
		var mine []store.Entry
		for _, en := range l {
			if en.EventID == k.ID {
				mine = append(mine, en)
			}
		}
		switch {
		case committed && len(takeovers) == 0:
			want := []store.Entry{{Consumer: "ledger", EventID: k.ID, OrderID: fmt.Sprint("holder-", holders-1), UserID: "u", AmountCents: 1}}
			e.equal(fmt.Sprintf("round %d: ledger after the current holder's commit", round), mine, want)
			if r.State != store.Processed || r.Attempts != e.expectedAttempts(holders) {
				e.t.Errorf("round %d: record %+v, want processed after %d attempts", round, r, e.expectedAttempts(holders))
			}
		case committed && len(takeovers) == 1 && e.committedGoneAtOnce():
			// The commit landed, and its record was past its expiry at
			// once (counted from the claim, a hold before): a claim after
			// it starts afresh, as on a key never seen.
			want := []store.Entry{{Consumer: "ledger", EventID: k.ID, OrderID: fmt.Sprint("holder-", holders-1), UserID: "u", AmountCents: 1}}
			e.equal(fmt.Sprintf("round %d: ledger after the current holder's commit", round), mine, want)
			if c := takeovers[0]; c.Takeover || c.Attempt != 1 || c.Token <= current {
				e.t.Errorf("round %d: claim after the commit's record expired: %+v, want a fresh claim (attempt 1, no takeover) with a token above %d", round, c, current)
			}
		case !committed && len(takeovers) == 1:
			refusal := store.ErrStaleToken
			attempt := holders + 1
			if e.goneAfterHold() {
				// The holder's record was gone once its hold ended: its
				// commit may find no claim at all, and the claim starts
				// afresh.
				refusal, attempt = store.ErrNotHeld, 1
				if errors.Is(commitErrs[holders-1], store.ErrStaleToken) {
					refusal = store.ErrStaleToken
				}
			}
			e.wantErr(fmt.Sprintf("round %d: commit of the holder taken over", round), commitErrs[holders-1], refusal)
			if len(mine) != 0 {
				e.t.Errorf("round %d: ledger holds %+v though no commit succeeded", round, mine)
			}
			if r.State != store.Processing || r.Token != takeovers[0].Token || r.Token <= current || r.Attempts != attempt {
				e.t.Errorf("round %d: record %+v, want processing under the takeover's token %d (above %d), attempt %d", round, r, takeovers[0].Token, current, attempt)
			}
		default:
			e.t.Errorf("round %d: current holder's commit error %v with %d takeovers %+v: want the commit or exactly one takeover", round, commitErrs[holders-1], len(takeovers), takeovers)
		}
	}
}

// expectedAttempts is the attempts of a record claimed n times in a row,
// each after the previous lease ran out.
func (e *env) expectedAttempts(n int) int {
	if e.goneAfterHold() {
		return 1
	}
	return n
}

// checkConcurrentDistinctKeys: goroutines settling different keys at once
// all succeed. Catches stores that fail under contention (SQLite's
// SQLITE_BUSY left to the caller, a connection shared between goroutines)
// and lost updates to shared state.
func checkConcurrentDistinctKeys(e *env) {
	const perWorker = 4
	errs := make([]error, workers)
	parallel(func(i int) {
		for j := range perWorker {
			id := fmt.Sprintf("w%d-%d", i, j)
			k := key(id)
			c, err := e.s.Claim(e.ctx, k, leaseMs)
			if err == nil && c.Outcome != store.Acquired {
				err = fmt.Errorf("claim of a fresh key = %+v", c)
			}
			if err == nil {
				var tx store.Tx
				if tx, err = e.s.Begin(e.ctx, k, c.Token); err == nil {
					tx.Credit(entry("ledger", id, int64(j)))
					var res store.CommitResult
					res, err = tx.Commit(e.ctx)
					if err == nil && res.Credited != 1 {
						err = fmt.Errorf("commit of %s = %+v, want one credit", k, res)
					}
				}
			}
			if err != nil {
				errs[i] = fmt.Errorf("%s: %w", id, err)
				return
			}
		}
	})
	for _, err := range errs {
		if err != nil {
			e.t.Errorf("concurrent settle: %v", err)
		}
	}
	if l := e.ledger(); len(l) != workers*perWorker {
		e.t.Errorf("ledger has %d entries, want %d", len(l), workers*perWorker)
	}
	for _, r := range e.records() {
		if r.State != store.Processed {
			e.t.Errorf("record %+v, want processed", r)
		}
	}
}
