package storetest

import (
	"github.com/idemcheck/idemcheck/impl/contract/store"
)

// checkFailReleasesAtOnce: Fail records the failure (state failed, the
// reason as LastError, no lease) and the key can be claimed again at once —
// not a takeover, the next attempt, a greater token. Catches a failure left
// in processing until its lease runs out, a failed record that stays locked,
// and a reclaim flagged as a takeover.
func checkFailReleasesAtOnce(e *env) {
	k := key("e1")
	c := e.acquire(k)
	took := e.briefly(5)
	e.advance(took)
	if e.keepsMark() {
		checkFailKeepsMark(e, k, c, took)
		return
	}
	if err := e.fail(k, c.Token, "boom"); err != nil {
		e.t.Fatalf("Fail: %v", err)
	}
	attempt := 2
	if e.deletesFailed() {
		// Declared: a failed attempt's record is deleted, and the next
		// claim starts again at attempt 1.
		if r, ok := e.get(k); ok {
			e.t.Errorf("record after Fail = %+v, want none: the store declares that Fail deletes it", r)
		}
		attempt = 1
	} else {
		e.equal("record after Fail", e.mustGet(k), store.Record{
			Key: k, State: store.Failed, StartedAtMs: startMs, Attempts: 1, Token: c.Token, LastError: "boom",
		})
	}
	again := e.claim(k)
	if again.Token <= c.Token {
		e.t.Errorf("reclaim after Fail: token %d, want greater than %d", again.Token, c.Token)
	}
	e.equal("reclaim right after Fail", again, store.Claim{Outcome: store.Acquired, Token: again.Token, Attempt: attempt, AtMs: startMs + took})
	r := e.mustGet(k)
	r.LastError = "" // whether a reclaim keeps the last error is left open
	e.equal("record after reclaim", r, store.Record{
		Key: k, State: store.Processing, StartedAtMs: startMs + took, Attempts: attempt, Token: again.Token, LeaseUntilMs: e.leaseUntil(startMs + took),
	})
	// The worker whose attempt failed is fenced off, record or not.
	before := e.snapshot()
	_, err := e.commit(k, c.Token, entry("ledger", "e1-late", 1))
	e.wantErr("commit by the worker whose attempt failed", err, store.ErrStaleToken)
	e.unchanged("a commit after Fail with the failed attempt's token", before)
}

// checkFailKeepsMark: declared, Fail changes nothing — the mark stays in
// processing under its token and lease — and the key is claimed again once
// the hold ended: a takeover, the next attempt, a greater token (or, where
// the record is gone by then, a fresh claim); the failed worker is then
// fenced off. Catches a kept mark that never expires, and one whose
// takeover keeps the token. took is how long after the claim Fail came.
func checkFailKeepsMark(e *env, k store.Key, c store.Claim, took int64) {
	before := e.snapshot()
	if err := e.fail(k, c.Token, "boom"); err != nil {
		e.t.Fatalf("Fail: %v", err)
	}
	e.unchanged("Fail under a kept mark", before)
	e.equal("claim while the failed attempt's mark holds", e.claim(k), store.Claim{Outcome: e.busy(), AtMs: e.now()})
	e.advance(e.hold() - took)
	at := e.now()
	again := e.claim(k)
	if again.Token <= c.Token {
		e.t.Errorf("claim once the mark ran out: token %d, want greater than %d", again.Token, c.Token)
	}
	e.equal("claim once the mark ran out", again, store.Claim{Outcome: store.Acquired, Token: again.Token, Attempt: e.afterExpiry(1), Takeover: !e.goneAfterHold(), AtMs: at})
	before = e.snapshot()
	_, err := e.commit(k, c.Token, entry("ledger", "e1-late", 1))
	e.wantErr("commit by the worker whose attempt failed, once taken over", err, store.ErrStaleToken)
	e.unchanged("a commit with the failed attempt's token after the takeover", before)
}

// checkFailWithStaleTokenChangesNothing: Fail with a token that is not the
// record's current one changes nothing: ErrStaleToken while another holder
// has it, ErrNotHeld when nobody holds it (never claimed, processed, already
// failed). Catches a Fail without the fencing check — a late worker's
// failure would release the new holder's claim — and a Fail that creates a
// record.
func checkFailWithStaleTokenChangesNothing(e *env) {
	k := key("e1")
	a := e.acquire(k)
	e.advance(e.hold())
	b := e.acquire(k)
	before := e.snapshot()
	e.wantStale("Fail by the holder whose lease was taken over", e.fail(k, a.Token, "late"), store.ErrStaleToken)
	e.unchanged("a stale Fail", before)

	never := key("never-claimed")
	e.wantStale("Fail of a never claimed key", e.fail(never, 1, "boom"), store.ErrNotHeld)
	e.unchanged("a Fail of a never claimed key", before)

	e.mustCommit(k, b.Token)
	before = e.snapshot()
	e.wantStale("Fail of a processed key", e.fail(k, b.Token, "after"), store.ErrNotHeld)
	e.unchanged("a Fail of a processed key", before)

	twice := key("e2")
	c := e.acquire(twice)
	if err := e.fail(twice, c.Token, "first"); err != nil {
		e.t.Fatalf("Fail: %v", err)
	}
	before = e.snapshot()
	if err := e.fail(twice, c.Token, "second"); !e.keepsMark() || err != nil {
		// Under a kept mark the failed attempt still holds its claim: a
		// second Fail is the same no-op.
		e.wantStale("second Fail of one claim", err, store.ErrNotHeld)
	}
	e.unchanged("a second Fail", before)
}

// checkKeyIdentity: a key is the whole (Tenant, Consumer, ID) tuple, an
// empty tenant included: keys differing in one part are independent
// operations, and the same event under two consumers is processed once by
// each. Catches keys built by concatenation (a/b + c equals a + b/c), a
// tenant or consumer left out of the key, and an empty tenant rejected.
func checkKeyIdentity(e *env) {
	keys := []store.Key{
		{Tenant: "", Consumer: "ledger", ID: "e1"},
		{Tenant: "t1", Consumer: "ledger", ID: "e1"},
		{Tenant: "t1", Consumer: "email", ID: "e1"},
		{Tenant: "t1", Consumer: "ledger", ID: "e2"},
		{Tenant: "a/b", Consumer: "c", ID: "d"},
		{Tenant: "a", Consumer: "b/c", ID: "d"},
	}
	tokens := map[store.Key]uint64{}
	for _, k := range keys {
		c := e.claim(k)
		if c.Outcome != store.Acquired || c.Attempt != 1 || c.Takeover {
			e.t.Errorf("first claim of %q = %+v, want acquired with attempt 1: keys differing in one part are different operations", k, c)
		}
		tokens[k] = c.Token
	}
	// Settle two of them: the same event under two consumers.
	ledgerKey, emailKey := keys[1], keys[2]
	if res := e.mustCommit(ledgerKey, tokens[ledgerKey], entry("ledger", "e1", 100)); res.Credited != 1 {
		e.t.Errorf("ledger consumer's commit = %+v, want one credit", res)
	}
	if res := e.mustCommit(emailKey, tokens[emailKey], entry("email", "e1", 100)); res.Credited != 1 {
		e.t.Errorf("email consumer's commit = %+v, want one credit", res)
	}
	for _, k := range keys {
		r := e.mustGet(k)
		want := store.Processing
		if k == ledgerKey || k == emailKey {
			want = store.Processed
		}
		if r.State != want || r.Token != tokens[k] || r.Attempts != 1 {
			e.t.Errorf("record of %q = %+v, want %s under its own token %d with 1 attempt", k, r, want, tokens[k])
		}
		c := e.claim(k)
		wantOutcome := e.busy()
		if want == store.Processed {
			wantOutcome = store.AlreadyProcessed
		}
		if c.Outcome != wantOutcome {
			e.t.Errorf("claim of %q = %+v, want %s", k, c, wantOutcome)
		}
	}
	if n := len(e.records()); n != len(keys) {
		e.t.Errorf("Records has %d records, want %d, one per key", n, len(keys))
	}
}
