// Package genwindow is a library-shaped example: an idempotency repository
// that remembers processed operations for a window kept in generations, the
// way a deduplicating cache that must never scan its whole content does.
// Operations finished during the current half window go into the youngest
// generation; every half window the oldest of three generations is dropped
// whole and a fresh one begins. An operation is therefore forgotten some
// time between one window and one and a half after it finished — never
// before the window, the repository's promise, and never after one and a
// half, its bound on memory. It has no retention call.
//
// It takes its clock as a function. It knows nothing of idemcheck beyond
// the store contract it implements; its test declares the range
// (store.Conventions{Expiry: store.ExpiryByLibrary, ExpiryMs: window,
// ExpiryLatestMs: window*3/2}) and checks it through idemcheck's public API
// only.
//
// Version 1 (NewV1) kept two generations: an operation was forgotten
// between half a window and one window after it finished, so a redelivery
// inside the window was processed again.
package genwindow

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

// Repo is the repository.
type Repo struct {
	mu  sync.Mutex
	now func() time.Time
	// half is the half window: how long each generation takes new
	// operations.
	half int64
	// keep is how many generations are kept: 3 (2 in version 1).
	keep int
	// gens are the generations of processed operations, youngest first;
	// gens[0] began at genStart.
	gens     []map[store.Key]*store.Record
	genStart int64
	// inflight holds the records claimed and not settled.
	inflight map[store.Key]*store.Record
	ledger   map[[2]string]store.Entry
	token    uint64
}

// New returns an empty repository over now that remembers a processed
// operation for at least window, at most one and a half windows. window
// is whole milliseconds, an even number of them.
func New(now func() time.Time, window time.Duration) *Repo {
	return newRepo(now, window, 3)
}

// NewV1 is the repository as version 1 shipped it: two generations.
func NewV1(now func() time.Time, window time.Duration) *Repo {
	return newRepo(now, window, 2)
}

func newRepo(now func() time.Time, window time.Duration, keep int) *Repo {
	r := &Repo{now: now, half: window.Milliseconds() / 2, keep: keep, inflight: map[store.Key]*store.Record{}, ledger: map[[2]string]store.Entry{}}
	r.gens = make([]map[store.Key]*store.Record, keep)
	for i := range r.gens {
		r.gens[i] = map[store.Key]*store.Record{}
	}
	r.genStart = r.nowMs()
	return r
}

func (r *Repo) nowMs() int64 { return r.now().UnixMilli() }

// rotate starts a generation for every half window passed since the
// youngest began, dropping the oldest each time. Every access does it
// first, so that rotations happen on time however seldom it is called.
func (r *Repo) rotate(now int64) {
	if now-r.genStart >= int64(r.keep)*r.half {
		// Every generation has run out: start afresh, on the same beat.
		for i := range r.gens {
			r.gens[i] = map[store.Key]*store.Record{}
		}
		r.genStart = now - (now-r.genStart)%r.half
		return
	}
	for now-r.genStart >= r.half {
		copy(r.gens[1:], r.gens[:len(r.gens)-1])
		r.gens[0] = map[store.Key]*store.Record{}
		r.genStart += r.half
	}
}

// done finds a processed operation.
func (r *Repo) done(key store.Key) (*store.Record, bool) {
	for _, g := range r.gens {
		if rec, ok := g[key]; ok {
			return rec, true
		}
	}
	return nil, false
}

// Claim takes key for leaseMs unless it is done or leased.
func (r *Repo) Claim(_ context.Context, key store.Key, leaseMs int64) (store.Claim, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.nowMs()
	r.rotate(now)
	if _, ok := r.done(key); ok {
		return store.Claim{Outcome: store.AlreadyProcessed, AtMs: now}, nil
	}
	rec, ok := r.inflight[key]
	switch {
	case !ok:
		rec = &store.Record{Key: key}
		r.inflight[key] = rec
	case rec.State == store.Processing && now < rec.LeaseUntilMs:
		return store.Claim{Outcome: store.Locked, AtMs: now}, nil
	}
	takeover := rec.State == store.Processing
	r.token++ // one counter for the repository: tokens outlive forgotten operations
	rec.State, rec.StartedAtMs, rec.LeaseUntilMs, rec.Token = store.Processing, now, now+leaseMs, r.token
	rec.Attempts++
	return store.Claim{Outcome: store.Acquired, Token: rec.Token, Attempt: rec.Attempts, Takeover: takeover, AtMs: now}, nil
}

func (r *Repo) held(key store.Key, token uint64) error {
	rec, ok := r.inflight[key]
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
	r.rotate(r.nowMs())
	if err := r.held(key, token); err != nil {
		return err
	}
	rec := r.inflight[key]
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
	r.rotate(r.nowMs())
	if rec, ok := r.done(key); ok {
		return *rec, true, nil
	}
	if rec, ok := r.inflight[key]; ok {
		return *rec, true, nil
	}
	return store.Record{}, false, nil
}

// Cleanup does nothing: the window forgets by itself.
func (r *Repo) Cleanup(context.Context, int64) ([]store.Key, error) { return nil, nil }

// Records lists every record by key.
func (r *Repo) Records(context.Context) ([]store.Record, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.rotate(r.nowMs())
	out := []store.Record{}
	for _, rec := range r.inflight {
		out = append(out, *rec)
	}
	for _, g := range r.gens {
		for _, rec := range g {
			out = append(out, *rec)
		}
	}
	slices.SortFunc(out, func(a, b store.Record) int { return byKey(a.Key, b.Key) })
	return out, nil
}

// Ledger lists the ledger by (consumer, event).
func (r *Repo) Ledger(context.Context) ([]store.Entry, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.SortedFunc(maps.Values(r.ledger), func(a, b store.Entry) int {
		return cmp.Or(cmp.Compare(a.Consumer, b.Consumer), cmp.Compare(a.EventID, b.EventID))
	}), nil
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

// Commit checks the token, then lands the entries and moves the operation
// into the youngest generation, together.
func (x *tx) Commit(context.Context) (store.CommitResult, error) {
	if x.done {
		return store.CommitResult{}, fmt.Errorf("genwindow: unit of work for %s already finished", x.key)
	}
	x.done = true
	r := x.r
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.nowMs()
	r.rotate(now)
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
	rec := r.inflight[x.key]
	delete(r.inflight, x.key)
	rec.State, rec.FinishedAtMs, rec.LeaseUntilMs = store.Processed, now, 0
	r.gens[0][x.key] = rec
	return res, nil
}
