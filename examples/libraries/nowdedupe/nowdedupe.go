// Package nowdedupe is a library-shaped example: an in-memory idempotency
// repository that reads the machine's clock (time.Now) and takes none, as
// most libraries do, and keeps a read cache that a background goroutine
// sweeps every second. It knows nothing of idemcheck beyond the store
// contract it implements; its test checks it through idemcheck's public
// API only, every check playing in testing/synctest bubbles.
//
// Close stops the sweeper. Version 1 (NewV1) had no way to stop it: every
// repository left a goroutine running for the rest of the process.
package nowdedupe

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
	rows   map[store.Key]*store.Record
	ledger map[[2]string]store.Entry
	token  uint64
	// cache holds records read recently; the sweeper empties it.
	cache map[store.Key]store.Record
	stop  chan struct{}
	once  sync.Once
	// split: the effect and the mark are two writes (Redis-style).
	split bool
}

// New returns an empty repository and starts its cache sweeper.
func New() *Repo {
	r := &Repo{rows: map[store.Key]*store.Record{}, ledger: map[[2]string]store.Entry{}, cache: map[store.Key]store.Record{}, stop: make(chan struct{})}
	go r.sweep(r.stop)
	return r
}

// NewV1 is the repository as version 1 shipped it: Close left the sweeper
// running.
func NewV1() *Repo {
	r := New()
	r.once.Do(func() {}) // Close's work, done: Close stops nothing
	return r
}

// NewSplit is a repository whose commit writes the effect and then the
// mark, as a Redis-backed one does: a worker that dies between the two
// leaves the effect without its mark.
func NewSplit() *Repo {
	r := New()
	r.split = true
	return r
}

// sweep empties the read cache every second until stop closes.
func (r *Repo) sweep(stop chan struct{}) {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case <-tick.C:
			r.mu.Lock()
			clear(r.cache)
			r.mu.Unlock()
		case <-stop:
			return
		}
	}
}

// Close stops the sweeper.
func (r *Repo) Close() error {
	r.once.Do(func() { close(r.stop) })
	return nil
}

func nowMs() int64 { return time.Now().UnixMilli() }

// Claim takes key for leaseMs unless it is done or leased.
func (r *Repo) Claim(_ context.Context, key store.Key, leaseMs int64) (store.Claim, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.cache, key)
	now := nowMs()
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
	r.token++
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
	delete(r.cache, key)
	if err := r.held(key, token); err != nil {
		return err
	}
	rec := r.rows[key]
	rec.State, rec.LastError, rec.LeaseUntilMs = store.Failed, reason, 0
	return nil
}

// Begin opens a unit of work; the token is checked on commit.
func (r *Repo) Begin(_ context.Context, key store.Key, token uint64) (store.Tx, error) {
	t := &tx{r: r, key: key, token: token}
	if r.split {
		return &splitTx{tx: t}, nil
	}
	return t, nil
}

// Get reads one record, through the cache.
func (r *Repo) Get(_ context.Context, key store.Key) (store.Record, bool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if rec, ok := r.cache[key]; ok {
		return rec, true, nil
	}
	rec, ok := r.rows[key]
	if !ok {
		return store.Record{}, false, nil
	}
	r.cache[key] = *rec
	return *rec, true, nil
}

// Cleanup deletes processed records finished retentionMs ago or more.
func (r *Repo) Cleanup(_ context.Context, retentionMs int64) ([]store.Key, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []store.Key
	cutoff := nowMs() - retentionMs
	for k, rec := range r.rows {
		if rec.State == store.Processed && rec.FinishedAtMs <= cutoff {
			out = append(out, k)
			delete(r.rows, k)
			delete(r.cache, k)
		}
	}
	slices.SortFunc(out, byKey)
	return out, nil
}

// Records lists every record by key.
func (r *Repo) Records(context.Context) ([]store.Record, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
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

// NowMs is the repository's time: the machine's.
func (r *Repo) NowMs(context.Context) (int64, error) { return nowMs(), nil }

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
func (x *tx) Commit(ctx context.Context) (store.CommitResult, error) {
	res, err := x.effect()
	if err != nil {
		return res, err
	}
	return res, x.mark()
}

// effect checks the token and lands the entries.
func (x *tx) effect() (store.CommitResult, error) {
	if x.done {
		return store.CommitResult{}, fmt.Errorf("nowdedupe: unit of work for %s already finished", x.key)
	}
	x.done = true
	r := x.r
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.held(x.key, x.token); err != nil {
		return store.CommitResult{}, err
	}
	res := store.CommitResult{AtMs: nowMs()}
	for _, e := range x.staged {
		k := [2]string{e.Consumer, e.EventID}
		if _, dup := r.ledger[k]; dup {
			res.DuplicatesIgnored++
			continue
		}
		r.ledger[k] = e
		res.Credited++
	}
	return res, nil
}

// mark settles the record, if the token still holds it.
func (x *tx) mark() error {
	r := x.r
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.cache, x.key)
	if err := r.held(x.key, x.token); err != nil {
		return err
	}
	rec := r.rows[x.key]
	rec.State, rec.FinishedAtMs, rec.LeaseUntilMs = store.Processed, nowMs(), 0
	return nil
}

// splitTx is the unit of work of a split repository: two writes.
type splitTx struct{ *tx }

func (x *splitTx) CommitEffect(context.Context) (store.CommitResult, error) { return x.effect() }

func (x *splitTx) CommitMark(context.Context) error { return x.mark() }
