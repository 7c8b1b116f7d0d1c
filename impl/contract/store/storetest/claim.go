package storetest

import (
	"github.com/idemcheck/idemcheck/impl/contract/store"
)

// checkFirstClaimAcquires: the first claim of a key acquires it with attempt
// 1, a positive token and a lease of leaseMs from the store's time.
// Catches attempts counted from 0, a lease not stored, times not taken from
// the store's clock, and a Get that invents records.
func checkFirstClaimAcquires(e *env) {
	k := key("e1")
	if r, ok := e.get(k); ok {
		e.t.Errorf("Get(%s) before any claim = %+v, want no record", k, r)
	}
	c := e.claim(k)
	if c.Token == 0 {
		e.t.Errorf("first claim's token is 0; tokens must be positive to tell them from no token")
	}
	e.equal("first claim", c, store.Claim{Outcome: store.Acquired, Token: c.Token, Attempt: 1, AtMs: startMs})
	e.equal("record after the first claim", e.mustGet(k), store.Record{
		Key: k, State: store.Processing, StartedAtMs: startMs, Attempts: 1, Token: c.Token, LeaseUntilMs: e.leaseUntil(startMs),
	})
	e.equal("Records after one claim", e.records(), []store.Record{e.mustGet(k)})
	e.equal("Ledger after a claim alone", e.ledger(), []store.Entry(nil))
}

// checkProcessedIsAlreadyProcessed: a processed key answers AlreadyProcessed
// for ever, changing nothing. Catches a processed record treated as an
// expired lease (the duplicate is processed again) and attempts counted on a
// duplicate.
func checkProcessedIsAlreadyProcessed(e *env) {
	k := key("e1")
	e.settle(k, entry("ledger", "e1", 100))
	before := e.snapshot()
	waits := []int64{0, leaseMs, 100 * leaseMs}
	if e.libraryExpiry() {
		// Declared: the library may remove the record once its expiry has
		// passed (CleanupByStoreTime checks that); until then it is done.
		// Claim and commit fell in the same instant: counted from either,
		// the expiry starts at it.
		half := (e.conv.ExpiryMs - 1) / 2
		waits = []int64{0, half, half}
	}
	for _, wait := range waits {
		e.advance(wait)
		c := e.claim(k)
		e.equal("claim of a processed key", c, store.Claim{Outcome: store.AlreadyProcessed, AtMs: e.now()})
	}
	e.unchanged("claiming a processed key", before)
}

// checkValidLeaseIsLocked: while the holder's lease runs, a claim answers
// Locked and changes nothing. Catches a lease ignored (two holders at once)
// and a locked claim that bumps attempts or the token. The waits add up to
// one millisecond before the hold ends: the lease's last instant (its end,
// for an inclusive one), or the record's own expiry where it comes first.
func checkValidLeaseIsLocked(e *env) {
	k := key("e1")
	e.acquire(k)
	before := e.snapshot()
	last := e.hold() - 1
	for _, wait := range []int64{0, last / 2, last - last/2} {
		e.advance(wait)
		c := e.claim(k)
		e.equal("claim under a valid lease", c, store.Claim{Outcome: e.busy(), AtMs: e.now()})
	}
	e.unchanged("a locked claim", before)
}

// checkExpiredLeaseIsTakenOver: a lease taken at t for L ms is valid over
// [t, t+L); at t+L another claim takes it over with Takeover set, the next
// attempt, a greater token and a fresh lease. The boundary is the reference
// store's and the linearizability model's: a model-versus-store diff needs
// one rule. Catches an inclusive lease end, a takeover not flagged, and a
// takeover that keeps the old token or start time. Under the declared
// conventions the hold may end later (an inclusive end, a mark with no
// lease that holds until its own expiry) or sooner (the record's own
// expiry), and the record may be gone then rather than taken over.
func checkExpiredLeaseIsTakenOver(e *env) {
	k := key("e1")
	first := e.acquire(k)
	if hold := e.hold(); hold > leaseMs {
		// Declared to hold past the lease asked for: busy there, its hold
		// ending later.
		e.advance(leaseMs)
		before := e.snapshot()
		e.equal("claim at the end of the lease asked for, under a hold that lasts longer", e.claim(k), store.Claim{Outcome: e.busy(), AtMs: e.now()})
		e.unchanged("a claim while the hold lasts", before)
		e.advance(hold - leaseMs)
	} else {
		e.advance(hold)
	}
	if e.goneAfterHold() {
		checkExpiredLeaseVanishes(e, k, first)
		return
	}
	at := e.now()
	c := e.claim(k)
	if c.Token <= first.Token {
		e.t.Errorf("takeover token %d, want greater than the expired holder's %d", c.Token, first.Token)
	}
	e.equal("takeover claim", c, store.Claim{Outcome: store.Acquired, Token: c.Token, Attempt: 2, Takeover: true, AtMs: at})
	e.equal("record after takeover", e.mustGet(k), store.Record{
		Key: k, State: store.Processing, StartedAtMs: at, Attempts: 2, Token: c.Token, LeaseUntilMs: at + leaseMs,
	})
}

// checkExpiredLeaseVanishes: declared, a record whose lease ran out (or
// whose own expiry passed) is gone — no record, no takeover — and the next
// claim acquires the key afresh, attempt 1, with a token greater than the
// expired holder's, who then holds nothing. Catches a vanished record
// whose token counter restarts, and a record that lingers after its
// declared end.
func checkExpiredLeaseVanishes(e *env, k store.Key, first store.Claim) {
	if r, ok := e.get(k); ok {
		e.t.Errorf("record once its hold ended = %+v, want none: the store declares that it is gone then", r)
	}
	at := e.now()
	c := e.claim(k)
	if c.Token <= first.Token {
		e.t.Errorf("claim after the record was gone: token %d, want greater than the expired holder's %d", c.Token, first.Token)
	}
	e.equal("claim after the record was gone", c, store.Claim{Outcome: store.Acquired, Token: c.Token, Attempt: 1, AtMs: at})
	e.equal("record after the record was gone", e.mustGet(k), store.Record{
		Key: k, State: store.Processing, StartedAtMs: at, Attempts: 1, Token: c.Token, LeaseUntilMs: e.leaseUntil(at),
	})
}

// checkTokensStrictlyIncrease: every token acquired for a key exceeds every
// earlier one for it, across takeovers and fail/reclaim, also when both
// happen in the same millisecond and other keys are claimed in between.
// Catches tokens derived from time or reused after a fail.
func checkTokensStrictlyIncrease(e *env) {
	k := key("e1")
	var last uint64
	next := func(how string, c store.Claim) {
		e.t.Helper()
		if c.Outcome != store.Acquired {
			e.t.Fatalf("%s: claim = %+v, want acquired", how, c)
		}
		if c.Token <= last {
			e.t.Errorf("%s: token %d, want greater than every earlier token for the key (latest %d)", how, c.Token, last)
		}
		last = c.Token
	}
	next("first claim", e.claim(k))
	for i := range 3 {
		if err := e.fail(k, last, "transient"); err != nil {
			e.t.Fatalf("Fail: %v", err)
		}
		e.acquire(key("other-" + string(rune('a'+i))))
		if e.keepsMark() {
			// Declared: the failed attempt's mark stays until its hold
			// ends.
			e.advance(e.hold())
			next("reclaim once the failed attempt's mark ran out", e.claim(k))
		} else {
			next("reclaim after fail in the same millisecond", e.claim(k))
		}
		e.advance(e.hold())
		next("takeover", e.claim(k))
	}
}

// checkTokensIncreaseAfterCleanup: after Cleanup deleted a key's record, a
// new claim starts again at attempt 1 but with a token greater than every
// earlier one, so the old holder's token stays fenced. Catches per-record
// token counters, which restart when the record is deleted.
func checkTokensIncreaseAfterCleanup(e *env) {
	k := key("e1")
	first := e.acquire(k)
	e.advance(e.hold())
	second := e.acquire(k) // a takeover (or a fresh claim): first is now a stale holder
	e.mustCommit(k, second.Token, entry("ledger", "e1", 100))
	if e.libraryExpiry() {
		// Declared: the library removes the record itself, surely by its
		// latest (claim and commit fell in the same instant).
		e.advance(e.conv.ExpiryLatest())
	} else {
		e.advance(retentionMs)
		e.equal("Cleanup", e.cleanup(retentionMs), []store.Key{k})
	}
	if r, ok := e.get(k); ok {
		e.t.Fatalf("record survived its removal: %+v", r)
	}
	c := e.claim(k)
	if c.Token <= second.Token {
		e.t.Errorf("claim after cleanup: token %d, want greater than the earlier tokens %d and %d", c.Token, first.Token, second.Token)
	}
	e.equal("claim after cleanup", c, store.Claim{Outcome: store.Acquired, Token: c.Token, Attempt: 1, AtMs: e.now()})
	before := e.snapshot()
	for _, old := range []uint64{first.Token, second.Token} {
		_, err := e.commit(k, old, entry("ledger", "e1-late", 1))
		e.wantErr("commit with a token issued before the cleanup", err, store.ErrStaleToken)
	}
	e.unchanged("commits with pre-cleanup tokens", before)
}

// checkAttemptsCount: attempts count acquisitions only — a takeover and a
// reclaim after Fail each count, a locked or already-processed claim does
// not. Catches attempts bumped on every claim call, and attempts reset on
// takeover.
func checkAttemptsCount(e *env) {
	k := key("e1")
	want := func(what string, c store.Claim, attempt int) {
		e.t.Helper()
		if c.Outcome != store.Acquired || c.Attempt != attempt {
			e.t.Errorf("%s: claim = %+v, want acquired with attempt %d", what, c, attempt)
		}
	}
	want("first claim", e.claim(k), 1)
	e.claim(k) // locked
	e.claim(k) // locked
	e.advance(e.hold())
	c := e.claim(k)
	attempts := e.afterExpiry(1)
	want("takeover after two locked claims", c, attempts)
	if err := e.fail(k, c.Token, "transient"); err != nil {
		e.t.Fatalf("Fail: %v", err)
	}
	var wantAttempts int
	switch {
	case e.deletesFailed():
		wantAttempts = 1 // the failed record was deleted: counting starts again
	case e.keepsMark():
		e.advance(e.hold()) // the failed attempt's mark stays until then
		wantAttempts = e.afterExpiry(attempts)
	default:
		wantAttempts = attempts + 1
	}
	c = e.claim(k)
	want("reclaim after fail", c, wantAttempts)
	e.mustCommit(k, c.Token)
	e.claim(k) // already processed
	if r := e.mustGet(k); r.Attempts != wantAttempts {
		e.t.Errorf("record attempts = %d, want %d", r.Attempts, wantAttempts)
	}
}

// checkNowMsIsStoreTime: NowMs and every decision's time read the store's
// clock. Catches a store reading another clock than the one it was given.
func checkNowMsIsStoreTime(e *env) {
	for _, step := range []int64{0, 1, 1234} {
		e.advance(step)
		got, err := e.s.NowMs(e.ctx)
		if err != nil {
			e.t.Fatalf("NowMs: %v", err)
		}
		if got != e.now() {
			e.t.Errorf("NowMs = %d, want the store's clock %d", got, e.now())
		}
	}
	if c := e.claim(key("e1")); c.AtMs != e.now() {
		e.t.Errorf("claim AtMs = %d, want %d", c.AtMs, e.now())
	}
}
