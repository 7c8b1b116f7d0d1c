package storetest

import (
	"context"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/idemcheck/idemcheck/impl/contract/clock"
	"github.com/idemcheck/idemcheck/impl/contract/store"
)

// env is what a check works with: the store under test, the clock that is
// its time, and helpers that fail the check on an unexpected error.
type env struct {
	t     tester
	s     store.Store
	clock *clock.Virtual
	ctx   context.Context
	// conv are the store's declared conventions.
	conv store.Conventions
}

// hold is how long after a claim its hold on the key surely ended under
// the store's conventions: its lease ran out, or the record's own expiry
// (UnsettledExpiryMs) came first — that alone for a mark with no lease.
func (e *env) hold() int64 { return e.conv.HoldMs(leaseMs) }

// goneAfterHold says whether a record left in processing is gone once its
// hold ended, rather than waiting to be taken over: its lease vanished,
// or its own expiry removed it.
func (e *env) goneAfterHold() bool {
	return e.conv.UnsettledGone(store.Processing, 0, e.conv.LeaseUntilMs(0, leaseMs), e.hold())
}

// committedGoneAtOnce says whether a record committed a hold after its
// claim is already past its expiry: the library's expiry counts from the
// claim and is no longer than a hold. A claim after such a commit may
// start afresh.
func (e *env) committedGoneAtOnce() bool {
	return e.libraryExpiry() && e.conv.ExpiryFrom == store.ExpiryFromClaim && e.hold() >= e.conv.ExpiryMs
}

// leaseUntil is the lease end of a record claimed at atMs: atMs+leaseMs,
// or 0 for a mark with no lease.
func (e *env) leaseUntil(atMs int64) int64 { return e.conv.LeaseUntilMs(atMs, leaseMs) }

// briefly is d, or less where the conventions would let a wait of d end
// what a check means to keep: a hold (a record's own expiry may be
// short), or a processed record expiring from its claim.
func (e *env) briefly(d int64) int64 {
	d = min(d, e.hold()-1)
	if e.libraryExpiry() && e.conv.ExpiryFrom == store.ExpiryFromClaim {
		d = min(d, e.conv.ExpiryMs-1)
	}
	return max(d, 0)
}

// busy is what a claim answers while another's lease runs.
func (e *env) busy() store.Outcome { return e.conv.BusyOutcome() }

// deletesFailed says whether Fail deletes the record.
func (e *env) deletesFailed() bool { return e.conv.FailedAttempt == store.FailedAttemptDeleted }

// keepsMark says whether Fail keeps the record in processing until its
// lease runs out.
func (e *env) keepsMark() bool { return e.conv.FailedAttempt == store.FailedAttemptKeptMark }

// libraryExpiry says whether the library removes processed records itself.
func (e *env) libraryExpiry() bool { return e.conv.Expiry == store.ExpiryByLibrary }

// afterExpiry is the attempt of a claim that follows one with attempt
// prev whose hold ended: the next, or 1 when the record was gone by then.
func (e *env) afterExpiry(prev int) int {
	if e.goneAfterHold() {
		return 1
	}
	return prev + 1
}

// wantStale fails the check unless err wraps target, or is nil for a store
// whose stale release is a silent no-op (by its convention).
func (e *env) wantStale(what string, err, target error) {
	e.t.Helper()
	if err == nil && e.conv.StaleRelease == store.StaleReleaseNoOp {
		return
	}
	e.wantErr(what, err, target)
}

// key returns a key of the default tenant and consumer.
func key(id string) store.Key { return store.Key{Tenant: "t1", Consumer: "ledger", ID: id} }

// entry returns a ledger entry whose fields all derive from its event, so a
// store that drops or swaps a column shows in a diff.
func entry(consumer, eventID string, amount int64) store.Entry {
	return store.Entry{Consumer: consumer, EventID: eventID, OrderID: "o-" + eventID, UserID: "u-" + eventID, AmountCents: amount}
}

func (e *env) now() int64 { return e.clock.NowMs() }

func (e *env) advance(ms int64) { e.clock.Advance(ms) }

func (e *env) claim(k store.Key) store.Claim {
	e.t.Helper()
	c, err := e.s.Claim(e.ctx, k, leaseMs)
	if err != nil {
		e.t.Fatalf("Claim(%s): %v", k, err)
	}
	return c
}

// acquire claims k and fails the check unless the claim was acquired.
func (e *env) acquire(k store.Key) store.Claim {
	e.t.Helper()
	c := e.claim(k)
	if c.Outcome != store.Acquired {
		e.t.Fatalf("Claim(%s) = %+v, want acquired", k, c)
	}
	return c
}

func (e *env) begin(k store.Key, token uint64, entries ...store.Entry) store.Tx {
	e.t.Helper()
	tx, err := e.s.Begin(e.ctx, k, token)
	if err != nil {
		e.t.Fatalf("Begin(%s, %d): %v", k, token, err)
	}
	for _, en := range entries {
		tx.Credit(en)
	}
	return tx
}

// commit runs a whole unit of work: begin, credit entries, commit.
func (e *env) commit(k store.Key, token uint64, entries ...store.Entry) (store.CommitResult, error) {
	e.t.Helper()
	return e.begin(k, token, entries...).Commit(e.ctx)
}

// mustCommit commits and fails the check on an error.
func (e *env) mustCommit(k store.Key, token uint64, entries ...store.Entry) store.CommitResult {
	e.t.Helper()
	res, err := e.commit(k, token, entries...)
	if err != nil {
		e.t.Fatalf("Commit(%s, token %d): %v", k, token, err)
	}
	return res
}

// settle claims k and commits entries under the claim.
func (e *env) settle(k store.Key, entries ...store.Entry) store.Claim {
	e.t.Helper()
	c := e.acquire(k)
	e.mustCommit(k, c.Token, entries...)
	return c
}

func (e *env) fail(k store.Key, token uint64, reason string) error {
	e.t.Helper()
	return e.s.Fail(e.ctx, k, token, reason)
}

func (e *env) get(k store.Key) (store.Record, bool) {
	e.t.Helper()
	r, ok, err := e.s.Get(e.ctx, k)
	if err != nil {
		e.t.Fatalf("Get(%s): %v", k, err)
	}
	if ok && r.Key != k {
		e.t.Errorf("Get(%s) returned the record of %s", k, r.Key)
	}
	return r, ok
}

func (e *env) mustGet(k store.Key) store.Record {
	e.t.Helper()
	r, ok := e.get(k)
	if !ok {
		e.t.Fatalf("Get(%s): no record", k)
	}
	return r
}

func (e *env) records() []store.Record {
	e.t.Helper()
	rs, err := e.s.Records(e.ctx)
	if err != nil {
		e.t.Fatalf("Records: %v", err)
	}
	return rs
}

func (e *env) ledger() []store.Entry {
	e.t.Helper()
	l, err := e.s.Ledger(e.ctx)
	if err != nil {
		e.t.Fatalf("Ledger: %v", err)
	}
	return l
}

func (e *env) cleanup(retention int64) []store.Key {
	e.t.Helper()
	keys, err := e.s.Cleanup(e.ctx, retention)
	if err != nil {
		e.t.Fatalf("Cleanup(%d): %v", retention, err)
	}
	return keys
}

// snapshot is the whole observable state of a store: what "changes nothing"
// is checked against.
type snapshot struct {
	Records []store.Record
	Ledger  []store.Entry
}

func (e *env) snapshot() snapshot {
	e.t.Helper()
	return snapshot{Records: e.records(), Ledger: e.ledger()}
}

// unchanged fails the check if the store's state differs from before.
func (e *env) unchanged(what string, before snapshot) {
	e.t.Helper()
	if d := cmp.Diff(before, e.snapshot(), cmpOpts); d != "" {
		e.t.Errorf("%s changed the store (-before +after):\n%s", what, d)
	}
}

// equal fails the check with a diff when got differs from want.
func (e *env) equal(what string, got, want any) {
	e.t.Helper()
	if d := cmp.Diff(want, got, cmpOpts); d != "" {
		e.t.Errorf("%s mismatch (-want +got):\n%s", what, d)
	}
}

// cmpOpts makes an empty slice equal a nil one: a store may return either
// for "none".
var cmpOpts = cmpopts.EquateEmpty()

// wantErr fails the check unless err wraps target (or, for a store with
// one error for every refusal, either refusal).
func (e *env) wantErr(what string, err, target error) {
	e.t.Helper()
	if e.conv.Refuses(err, target) {
		return
	}
	if e.conv.Refusal == store.RefusalOneError {
		e.t.Errorf("%s: error %v, want one wrapping %q or %q (one error for every refusal)", what, err, store.ErrStaleToken, store.ErrNotHeld)
		return
	}
	e.t.Errorf("%s: error %v, want one wrapping %q", what, err, target)
}
