// Package windowdedupe is a library-shaped example: an idempotency
// repository that remembers a processed operation for a window (a result
// TTL) and forgets it by itself afterwards. It has no retention call: what
// it keeps is its own business, and Cleanup does nothing. It takes its clock
// as a function, as many libraries do. It knows nothing of idemcheck beyond
// the store contract it implements; its test declares the window
// (store.Conventions{Expiry: store.ExpiryByLibrary, ExpiryMs: ...}) and
// checks it through idemcheck's public API only.
//
// Version 1 (NewV1) measured the window from the start of the attempt that
// settled the operation rather than from its end, so an operation that took
// long was forgotten early.
package windowdedupe

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/idemcheck/idemcheck/impl/contract/store"
)

// Repo is the repository.
type Repo struct {
	mu     sync.Mutex
	now    func() time.Time
	window int64 // ms
	rows   map[store.Key]*store.Record
	ledger map[[2]string]store.Entry
	token  uint64
	v1     bool
}

// New returns an empty repository over now that forgets a processed
// operation window after it finished.
func New(now func() time.Time, window time.Duration) *Repo {
	return &Repo{now: now, window: window.Milliseconds(), rows: map[store.Key]*store.Record{}, ledger: map[[2]string]store.Entry{}}
}

// NewV1 is the repository as version 1 shipped it.
func NewV1(now func() time.Time, window time.Duration) *Repo {
	r := New(now, window)
	r.v1 = true
	return r
}

func (r *Repo) nowMs() int64 { return r.now().UnixMilli() }

// forget drops what the window has passed: every access does it first.
func (r *Repo) forget(now int64) {
	for k, rec := range r.rows {
		from := rec.FinishedAtMs
		if r.v1 {
			from = rec.StartedAtMs // version 1's bug
		}
		if rec.State == store.Processed && now >= from+r.window {
			delete(r.rows, k)
		}
	}
}

// Claim takes key for leaseMs unless it is done or leased.
func (r *Repo) Claim(_ context.Context, key store.Key, leaseMs int64) (store.Claim, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.nowMs()
	r.forget(now)
	rec, ok := r.rows[key]
	switch {
	case !ok:
		rec = &store.Record{Key: key}
		r.rows[key] = rec
	case rec.State == store.Processed:
		return store.Claim{Outcome: store.AlreadyProcessed, AtMs: now}, nil
	case rec.State == store.Processing && now < rec.LeaseUntilMs:
		return store.Claim{Outcome: store.Locked, AtMs: now}, nil
	}
	takeover := rec.State == store.Processing
	r.token++ // one counter for the repository: tokens outlive forgotten rows
	rec.State, rec.StartedAtMs, rec.FinishedAtMs, rec.LeaseUntilMs, rec.Token = store.Processing, now, 0, now+leaseMs, r.token
	rec.Attempts++
	return store.Claim{Outcome: store.Acquired, Token: rec.Token, Attempt: rec.Attempts, Takeover: takeover, AtMs: now}, nil
}

func (r *Repo) held(key store.Key, token uint64) error {
	rec, ok := r.rows[key]
	switch {
	case !ok || rec.State != store.Processing:
		return fmt.Errorf("%w: %s", store.ErrNotHeld, key)
	case rec.Token != token:
		return fmt.Errorf("%w: %s", store.ErrStaleToken, key)
	}
	return nil
}

// Fail records a failed attempt so the key can be claimed again at once.
func (r *Repo) Fail(_ context.Context, key store.Key, token uint64, reason string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.forget(r.nowMs())
	if err := r.held(key, token); err != nil {
		return err
	}
	rec := r.rows[key]
	rec.State, rec.LastError, rec.LeaseUntilMs = store.Failed, reason, 0
	return nil
}

// Begin opens a unit of work; the token is checked on commit.
func (r *Repo) Begin(_ context.Context, key store.Key, token uint64) (store.Tx, error) {
	return &tx{r: r, key: key, token: token}, nil
}

// Get reads one record.
func (r *Repo) Get(_ context.Context, key store.Key) (store.Record, bool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.forget(r.nowMs())
	if rec, ok := r.rows[key]; ok {
		return *rec, true, nil
	}
	return store.Record{}, false, nil
}

// Cleanup does nothing: the repository forgets by its window alone.
func (r *Repo) Cleanup(context.Context, int64) ([]store.Key, error) { return nil, nil }

// Records lists every record by key.
func (r *Repo) Records(context.Context) ([]store.Record, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.forget(r.nowMs())
	out := []store.Record{}
	for _, rec := range r.rows {
		out = append(out, *rec)
	}
	slices.SortFunc(out, func(a, b store.Record) int { return byKey(a.Key, b.Key) })
	return out, nil
}

// Ledger lists the ledger by (consumer, event).
func (r *Repo) Ledger(context.Context) ([]store.Entry, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := []store.Entry{}
	for _, e := range r.ledger {
		out = append(out, e)
	}
	slices.SortFunc(out, func(a, b store.Entry) int {
		return cmp.Or(cmp.Compare(a.Consumer, b.Consumer), cmp.Compare(a.EventID, b.EventID))
	})
	return out, nil
}

// NowMs is the repository's time.
func (r *Repo) NowMs(context.Context) (int64, error) { return r.nowMs(), nil }

func byKey(a, b store.Key) int {
	return cmp.Or(cmp.Compare(a.Tenant, b.Tenant), cmp.Compare(a.Consumer, b.Consumer), cmp.Compare(a.ID, b.ID))
}

type tx struct {
	r      *Repo
	key    store.Key
	token  uint64
	staged []store.Entry
	done   bool
}

func (x *tx) Credit(e store.Entry) { x.staged = append(x.staged, e) }

func (x *tx) Rollback(context.Context) error { x.done = true; return nil }

// Commit checks the token, then lands the entries and the mark together.
func (x *tx) Commit(context.Context) (store.CommitResult, error) {
	if x.done {
		return store.CommitResult{}, fmt.Errorf("windowdedupe: unit of work for %s already finished", x.key)
	}
	x.done = true
	r := x.r
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.nowMs()
	r.forget(now)
	if err := r.held(x.key, x.token); err != nil {
		return store.CommitResult{}, err
	}
	res := store.CommitResult{AtMs: now}
	for _, e := range x.staged {
		k := [2]string{e.Consumer, e.EventID}
		if _, dup := r.ledger[k]; dup {
			res.DuplicatesIgnored++
			continue
		}
		r.ledger[k] = e
		res.Credited++
	}
	rec := r.rows[x.key]
	rec.State, rec.FinishedAtMs, rec.LeaseUntilMs = store.Processed, now, 0
	return res, nil
}
