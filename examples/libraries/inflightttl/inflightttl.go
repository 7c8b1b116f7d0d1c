// Package inflightttl is a library-shaped example: an idempotency
// repository, in the manner of the idempotency utilities of serverless
// toolkits, where every record carries its own expiration, stamped when
// it is written. A record in flight (claimed, or failed) expires a fixed
// time after its claim, whatever lease the claim asked for — a worker that
// outlives it loses its record, and a crashed one's failure does not stay
// for ever; a completed record expires a longer time after it completed.
// Within its expiration a record in flight is taken over once its lease
// ran out, as usual. Expired records are ignored by every read and
// deleted; the repository has no retention call.
//
// It takes a clock with a Now method. It knows nothing of idemcheck beyond
// the store contract it implements; its test declares both expirations
// (store.Conventions{UnsettledExpiryMs: inFlight, Expiry:
// store.ExpiryByLibrary, ExpiryMs: result}) and checks it through
// idemcheck's public API only.
//
// Version 1 (NewV1) used each record's version attribute as its fencing
// token: the version starts at 1 when a record is written afresh, so once
// an expired record in flight was replaced, the worker that had held it
// held the same token as the new holder, and its commit landed.
package inflightttl

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

// Clock is what the repository reads the time from.
type Clock interface {
	Now() time.Time
}

// item is one stored record with its expiration.
type item struct {
	rec        store.Record
	expiration int64
	version    uint64
}

// Repo is the repository.
type Repo struct {
	mu               sync.Mutex
	clock            Clock
	inFlight, result int64
	items            map[store.Key]*item
	ledger           map[[2]string]store.Entry
	seq              uint64 // the fencing token sequence, one for the repository
	v1               bool
}

// New returns an empty repository over clock whose records in flight
// expire inFlight after their claim, and completed ones result after
// they completed.
func New(clock Clock, inFlight, result time.Duration) *Repo {
	return &Repo{clock: clock, inFlight: inFlight.Milliseconds(), result: result.Milliseconds(), items: map[store.Key]*item{}, ledger: map[[2]string]store.Entry{}}
}

// NewV1 is the repository as version 1 shipped it.
func NewV1(clock Clock, inFlight, result time.Duration) *Repo {
	r := New(clock, inFlight, result)
	r.v1 = true
	return r
}

func (r *Repo) nowMs() int64 { return r.clock.Now().UnixMilli() }

// expire deletes every record past its expiration: every access does it
// first, as every read ignores them.
func (r *Repo) expire(now int64) {
	for k, it := range r.items {
		if now >= it.expiration {
			delete(r.items, k)
		}
	}
}

// Claim acquires key for leaseMs unless it is done or its lease runs.
func (r *Repo) Claim(_ context.Context, key store.Key, leaseMs int64) (store.Claim, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.nowMs()
	r.expire(now)
	it, ok := r.items[key]
	switch {
	case !ok:
		it = &item{rec: store.Record{Key: key}}
		r.items[key] = it
	case it.rec.State == store.Processed:
		return store.Claim{Outcome: store.AlreadyProcessed, AtMs: now}, nil
	case it.rec.State == store.Processing && now < it.rec.LeaseUntilMs:
		return store.Claim{Outcome: store.Locked, AtMs: now}, nil
	}
	takeover := it.rec.State == store.Processing
	it.version++
	r.seq++
	token := r.seq
	if r.v1 {
		token = it.version
	}
	it.rec.State, it.rec.StartedAtMs, it.rec.LeaseUntilMs, it.rec.Token, it.rec.LastError = store.Processing, now, now+leaseMs, token, ""
	it.rec.Attempts++
	it.expiration = now + r.inFlight
	return store.Claim{Outcome: store.Acquired, Token: token, Attempt: it.rec.Attempts, Takeover: takeover, AtMs: now}, nil
}

func (r *Repo) held(key store.Key, token uint64) error {
	it, ok := r.items[key]
	switch {
	case !ok || it.rec.State != store.Processing:
		return fmt.Errorf("%w: %s", store.ErrNotHeld, key)
	case it.rec.Token != token:
		return fmt.Errorf("%w: %s", store.ErrStaleToken, key)
	}
	return nil
}

// Fail records the failure; the record keeps the expiration of its claim.
func (r *Repo) Fail(_ context.Context, key store.Key, token uint64, reason string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.expire(r.nowMs())
	if err := r.held(key, token); err != nil {
		return err
	}
	it := r.items[key]
	it.rec.State, it.rec.LastError, it.rec.LeaseUntilMs = store.Failed, reason, 0
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
	r.expire(r.nowMs())
	if it, ok := r.items[key]; ok {
		return it.rec, true, nil
	}
	return store.Record{}, false, nil
}

// Cleanup does nothing: records expire by themselves.
func (r *Repo) Cleanup(context.Context, int64) ([]store.Key, error) { return nil, nil }

// Records lists every record by key.
func (r *Repo) Records(context.Context) ([]store.Record, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.expire(r.nowMs())
	out := []store.Record{}
	for _, it := range r.items {
		out = append(out, it.rec)
	}
	slices.SortFunc(out, func(a, b store.Record) int {
		return cmp.Or(cmp.Compare(a.Key.Tenant, b.Key.Tenant), cmp.Compare(a.Key.Consumer, b.Key.Consumer), cmp.Compare(a.Key.ID, b.Key.ID))
	})
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

type tx struct {
	r      *Repo
	key    store.Key
	token  uint64
	staged []store.Entry
	done   bool
}

func (x *tx) Credit(e store.Entry) { x.staged = append(x.staged, e) }

func (x *tx) Rollback(context.Context) error { x.done = true; return nil }

// Commit checks the token, then lands the entries and the completed
// record, with its new expiration, together.
func (x *tx) Commit(context.Context) (store.CommitResult, error) {
	if x.done {
		return store.CommitResult{}, fmt.Errorf("inflightttl: unit of work for %s already finished", x.key)
	}
	x.done = true
	r := x.r
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.nowMs()
	r.expire(now)
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
	it := r.items[x.key]
	it.version++
	it.rec.State, it.rec.FinishedAtMs, it.rec.LeaseUntilMs = store.Processed, now, 0
	it.expiration = now + r.result
	return res, nil
}
