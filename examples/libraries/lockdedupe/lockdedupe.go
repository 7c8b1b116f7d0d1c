// Package lockdedupe is a library-shaped example: idempotency by an
// expiring lock, the way a Redis-lock library does it (SET key token PX
// ttl). Its documented behaviour differs from a claim store's in four
// places:
//
//   - a failed attempt leaves its lock to expire rather than releasing it;
//   - an expired lock is simply gone: the next claim starts afresh;
//   - a commit after the lock expired is refused, even if nobody took the
//     key since;
//   - every refusal is one error, ErrLockLost.
//
// It takes its clock as a function. It knows nothing of idemcheck beyond
// the store contract it implements; its test declares the four
// (store.Conventions) and checks it through idemcheck's public API only.
//
// Version 1 (NewV1) checked the lock's token at commit but not its expiry,
// so a worker whose lock had run out still committed while nobody else
// held the key.
package lockdedupe

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/idemcheck/idemcheck/impl/contract/store"
)

// ErrLockLost is the one refusal: the caller's lock expired, or another
// holds the key, or nobody does.
var ErrLockLost = fmt.Errorf("lockdedupe: lock lost: %w", store.ErrStaleToken)

// Repo is the repository.
type Repo struct {
	mu     sync.Mutex
	now    func() time.Time
	rows   map[store.Key]*store.Record
	ledger map[[2]string]store.Entry
	token  uint64
	v1     bool
}

// New returns an empty repository over now.
func New(now func() time.Time) *Repo {
	return &Repo{now: now, rows: map[store.Key]*store.Record{}, ledger: map[[2]string]store.Entry{}}
}

// NewV1 is the repository as version 1 shipped it.
func NewV1(now func() time.Time) *Repo {
	r := New(now)
	r.v1 = true
	return r
}

func (r *Repo) nowMs() int64 { return r.now().UnixMilli() }

// expire drops every lock that ran out, as an expiring key vanishes.
func (r *Repo) expire(now int64) {
	for k, rec := range r.rows {
		if rec.State == store.Processing && now >= rec.LeaseUntilMs {
			delete(r.rows, k)
		}
	}
}

// Claim takes the lock of key for leaseMs unless it is done or locked.
func (r *Repo) Claim(_ context.Context, key store.Key, leaseMs int64) (store.Claim, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.nowMs()
	r.expire(now)
	if rec, ok := r.rows[key]; ok {
		if rec.State == store.Processed {
			return store.Claim{Outcome: store.AlreadyProcessed, AtMs: now}, nil
		}
		return store.Claim{Outcome: store.Locked, AtMs: now}, nil
	}
	r.token++ // one counter for the repository: tokens outlive expired locks
	r.rows[key] = &store.Record{Key: key, State: store.Processing, StartedAtMs: now, Attempts: 1, Token: r.token, LeaseUntilMs: now + leaseMs}
	return store.Claim{Outcome: store.Acquired, Token: r.token, Attempt: 1, AtMs: now}, nil
}

func (r *Repo) holds(key store.Key, token uint64) error {
	if rec, ok := r.rows[key]; ok && rec.State == store.Processing && rec.Token == token {
		return nil
	}
	return fmt.Errorf("%w (%s)", ErrLockLost, key)
}

// Fail leaves the lock to expire: the key is retried once it has.
func (r *Repo) Fail(_ context.Context, key store.Key, token uint64, _ string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.expire(r.nowMs())
	return r.holds(key, token)
}

// Begin opens a unit of work; the lock is checked on commit.
func (r *Repo) Begin(_ context.Context, key store.Key, token uint64) (store.Tx, error) {
	return &tx{r: r, key: key, token: token}, nil
}

// Get reads one record.
func (r *Repo) Get(_ context.Context, key store.Key) (store.Record, bool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.expire(r.nowMs())
	if rec, ok := r.rows[key]; ok {
		return *rec, true, nil
	}
	return store.Record{}, false, nil
}

// Cleanup deletes processed records finished retentionMs ago or more.
func (r *Repo) Cleanup(_ context.Context, retentionMs int64) ([]store.Key, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.nowMs()
	r.expire(now)
	var out []store.Key
	for k, rec := range r.rows {
		if rec.State == store.Processed && rec.FinishedAtMs <= now-retentionMs {
			out = append(out, k)
			delete(r.rows, k)
		}
	}
	slices.SortFunc(out, byKey)
	return out, nil
}

// Records lists every record by key.
func (r *Repo) Records(context.Context) ([]store.Record, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.expire(r.nowMs())
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

// Commit checks the lock, then lands the entries and the mark together.
func (x *tx) Commit(context.Context) (store.CommitResult, error) {
	if x.done {
		return store.CommitResult{}, fmt.Errorf("lockdedupe: unit of work for %s already finished", x.key)
	}
	x.done = true
	r := x.r
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.nowMs()
	if !r.v1 { // version 1 did not look at the lock's expiry
		r.expire(now)
	}
	if err := r.holds(x.key, x.token); err != nil {
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
