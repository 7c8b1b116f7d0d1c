// Package claimttl is a library-shaped example: an idempotency-key table
// whose keys expire a fixed time after they were claimed, not after they
// completed — "an idempotency key is kept for 24 hours after its request
// began", as payment APIs document it. Each row has an expires_at column,
// set by every acquisition of the key (the column's default when the row
// is inserted, and the update of a takeover or a retry after a failure)
// and left alone by the commit, so a completed key is forgotten TTL after
// the claim of the attempt that completed it, however long that attempt
// took. Rows still in flight go by their lease, not by expires_at. It has
// no retention call: the table forgets completed keys by itself.
//
// It takes its clock as a function. It knows nothing of idemcheck beyond
// the store contract it implements; its test declares the expiry
// (store.Conventions{Expiry: store.ExpiryByLibrary, ExpiryMs: ttl,
// ExpiryFrom: store.ExpiryFromClaim}) and checks it through idemcheck's
// public API only.
//
// Version 1 (NewV1) set expires_at only by the column's default, when the
// row is inserted: a key retried after a failure or taken over kept the
// expiry of its first claim, and was forgotten before its declared TTL.
package claimttl

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/idemcheck/idemcheck/impl/contract/store"
)

// row is one key's row: its record, and when the key expires once done.
type row struct {
	rec       store.Record
	expiresAt int64
}

// Table is the idempotency-key table and its ledger.
type Table struct {
	mu     sync.Mutex
	now    func() time.Time
	ttl    int64
	rows   map[store.Key]*row
	ledger map[[2]string]store.Entry
	seq    uint64 // the fencing token sequence, one for the table
	v1     bool
}

// New returns an empty table over now whose completed keys expire ttl
// after the claim of the attempt that completed them.
func New(now func() time.Time, ttl time.Duration) *Table {
	return &Table{now: now, ttl: ttl.Milliseconds(), rows: map[store.Key]*row{}, ledger: map[[2]string]store.Entry{}}
}

// NewV1 is the table as version 1 shipped it.
func NewV1(now func() time.Time, ttl time.Duration) *Table {
	t := New(now, ttl)
	t.v1 = true
	return t
}

func (t *Table) nowMs() int64 { return t.now().UnixMilli() }

// expire deletes the completed rows past their expires_at, as the
// table's reads ignore them: every access does it first.
func (t *Table) expire(now int64) {
	for k, r := range t.rows {
		if r.rec.State == store.Processed && now >= r.expiresAt {
			delete(t.rows, k)
		}
	}
}

// Claim acquires key for leaseMs unless it is done or leased.
func (t *Table) Claim(_ context.Context, key store.Key, leaseMs int64) (store.Claim, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.nowMs()
	t.expire(now)
	r, ok := t.rows[key]
	switch {
	case !ok:
		// INSERT: expires_at takes its default.
		r = &row{rec: store.Record{Key: key}, expiresAt: now + t.ttl}
		t.rows[key] = r
	case r.rec.State == store.Processed:
		return store.Claim{Outcome: store.AlreadyProcessed, AtMs: now}, nil
	case r.rec.State == store.Processing && now < r.rec.LeaseUntilMs:
		return store.Claim{Outcome: store.Locked, AtMs: now}, nil
	default:
		// UPDATE of a takeover or a retry: the key's TTL starts again
		// with this attempt (version 1's update left it).
		if !t.v1 {
			r.expiresAt = now + t.ttl
		}
	}
	takeover := r.rec.State == store.Processing
	t.seq++
	r.rec.State, r.rec.StartedAtMs, r.rec.FinishedAtMs, r.rec.LeaseUntilMs, r.rec.Token = store.Processing, now, 0, now+leaseMs, t.seq
	r.rec.Attempts++
	return store.Claim{Outcome: store.Acquired, Token: t.seq, Attempt: r.rec.Attempts, Takeover: takeover, AtMs: now}, nil
}

func (t *Table) held(key store.Key, token uint64) error {
	r, ok := t.rows[key]
	switch {
	case !ok || r.rec.State != store.Processing:
		return fmt.Errorf("%w: %s", store.ErrNotHeld, key)
	case r.rec.Token != token:
		return fmt.Errorf("%w: %s", store.ErrStaleToken, key)
	}
	return nil
}

// Fail marks the attempt failed so the key can be retried at once.
func (t *Table) Fail(_ context.Context, key store.Key, token uint64, reason string) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.expire(t.nowMs())
	if err := t.held(key, token); err != nil {
		return err
	}
	r := t.rows[key]
	r.rec.State, r.rec.LastError, r.rec.LeaseUntilMs = store.Failed, reason, 0
	return nil
}

// Begin opens a unit of work; the token is checked on commit.
func (t *Table) Begin(_ context.Context, key store.Key, token uint64) (store.Tx, error) {
	return &tx{t: t, key: key, token: token}, nil
}

// Get reads one row.
func (t *Table) Get(_ context.Context, key store.Key) (store.Record, bool, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.expire(t.nowMs())
	if r, ok := t.rows[key]; ok {
		return r.rec, true, nil
	}
	return store.Record{}, false, nil
}

// Cleanup does nothing: completed keys expire by themselves.
func (t *Table) Cleanup(context.Context, int64) ([]store.Key, error) { return nil, nil }

// Records lists every row by key.
func (t *Table) Records(context.Context) ([]store.Record, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.expire(t.nowMs())
	out := []store.Record{}
	for _, r := range t.rows {
		out = append(out, r.rec)
	}
	slices.SortFunc(out, func(a, b store.Record) int {
		return cmp.Or(cmp.Compare(a.Key.Tenant, b.Key.Tenant), cmp.Compare(a.Key.Consumer, b.Key.Consumer), cmp.Compare(a.Key.ID, b.Key.ID))
	})
	return out, nil
}

// Ledger lists the ledger by (consumer, event).
func (t *Table) Ledger(context.Context) ([]store.Entry, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return slices.SortedFunc(maps.Values(t.ledger), func(a, b store.Entry) int {
		return cmp.Or(cmp.Compare(a.Consumer, b.Consumer), cmp.Compare(a.EventID, b.EventID))
	}), nil
}

// NowMs is the table's time.
func (t *Table) NowMs(context.Context) (int64, error) { return t.nowMs(), nil }

type tx struct {
	t      *Table
	key    store.Key
	token  uint64
	staged []store.Entry
	done   bool
}

func (x *tx) Credit(e store.Entry) { x.staged = append(x.staged, e) }

func (x *tx) Rollback(context.Context) error { x.done = true; return nil }

// Commit checks the token, then lands the entries and marks the row done
// in one step; expires_at stays as the claim set it.
func (x *tx) Commit(context.Context) (store.CommitResult, error) {
	if x.done {
		return store.CommitResult{}, fmt.Errorf("claimttl: unit of work for %s already finished", x.key)
	}
	x.done = true
	t := x.t
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.nowMs()
	t.expire(now)
	if err := t.held(x.key, x.token); err != nil {
		return store.CommitResult{}, err
	}
	res := store.CommitResult{AtMs: now}
	for _, e := range x.staged {
		k := [2]string{e.Consumer, e.EventID}
		if _, dup := t.ledger[k]; dup {
			res.DuplicatesIgnored++
			continue
		}
		t.ledger[k] = e
		res.Credited++
	}
	r := t.rows[x.key]
	r.rec.State, r.rec.FinishedAtMs, r.rec.LeaseUntilMs = store.Processed, now, 0
	return res, nil
}
