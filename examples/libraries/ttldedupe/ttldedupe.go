// Package ttldedupe is a library-shaped example: an in-memory dedupe table
// with TTL leases, written as a small library would be, with its own
// documented conventions —
//
//   - a lease holds up to and including its expiry instant;
//   - a failed attempt deletes the key, so it can be claimed afresh;
//   - releasing with a stale token is a silent no-op;
//   - in marking mode (NewMarking), a claim marks the key before the
//     handler runs, so a second claim during the lease answers "already
//     processed"; the mark expires with the lease.
//
// It knows nothing of idemcheck beyond the store contract it implements;
// its test declares those conventions (store.Conventions) and checks it
// through idemcheck's public API only. Version 1 (NewV1) kept the fencing
// token counter in the row, so tokens restarted once a failed key was
// deleted; marking mode's version 1 (NewMarkingV1) never let a mark expire.
package ttldedupe

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/idemcheck/idemcheck/impl/contract/clock"
	"github.com/idemcheck/idemcheck/impl/contract/store"
)

// Table is the dedupe table and its ledger.
type Table struct {
	mu     sync.Mutex
	now    clock.Source
	rows   map[store.Key]*store.Record
	ledger map[[2]string]store.Entry
	token  uint64
	perRow bool // version 1's bug
	// leaseUnit multiplies every lease: 1, or version 0's 1,000.
	leaseUnit int64
	// marking: a claim during another's lease answers AlreadyProcessed.
	marking bool
	// forever: marking's version 1, whose mark never expires.
	forever bool
}

// New returns an empty table that tells time by now.
func New(now clock.Source) *Table {
	return &Table{now: now, rows: map[store.Key]*store.Record{}, ledger: map[[2]string]store.Entry{}, leaseUnit: 1}
}

// Default returns an empty table that reads the machine's clock
// (time.Now), as most libraries do.
func Default() *Table { return New(wallClock{}) }

// DefaultV0 is Default as version 0 shipped it: it read the lease as
// seconds, so a lease of 1,000 ms held for 1,000 s.
func DefaultV0() *Table {
	t := Default()
	t.leaseUnit = 1000
	return t
}

type wallClock struct{}

func (wallClock) NowMs() int64 { return time.Now().UnixMilli() }

// NewV1 is the table as version 1 shipped it.
func NewV1(now clock.Source) *Table {
	t := New(now)
	t.perRow = true
	return t
}

// NewMarking returns an empty table in marking mode, the design of many
// Redis dedupe libraries (SET key NX PX ttl): a claim marks the key before
// the handler runs, so a second claim while the lease holds answers
// AlreadyProcessed, not Locked. The mark expires with the lease, so a
// crashed worker's key is claimed again once its lease has run out.
func NewMarking(now clock.Source) *Table {
	t := New(now)
	t.marking = true
	return t
}

// NewMarkingV1 is marking mode as version 1 shipped it: the mark never
// expired, so a worker that crashed after its claim left the key marked
// for ever and the event was never processed.
func NewMarkingV1(now clock.Source) *Table {
	t := NewMarking(now)
	t.forever = true
	return t
}

// nextToken is the next fencing token for row r: version 1 counted in the
// row, which a delete resets.
func (t *Table) nextToken(r *store.Record) uint64 {
	if t.perRow {
		return r.Token + 1
	}
	t.token++
	return t.token
}

// Claim takes key for leaseMs unless it is done or leased.
func (t *Table) Claim(_ context.Context, key store.Key, leaseMs int64) (store.Claim, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.now.NowMs()
	r, ok := t.rows[key]
	switch {
	case !ok:
		r = &store.Record{Key: key}
		t.rows[key] = r
	case r.State == store.Processed:
		return store.Claim{Outcome: store.AlreadyProcessed, AtMs: now}, nil
	case r.State == store.Processing && (t.forever || now <= r.LeaseUntilMs): // the lease holds at its expiry instant
		if t.marking {
			return store.Claim{Outcome: store.AlreadyProcessed, AtMs: now}, nil
		}
		return store.Claim{Outcome: store.Locked, AtMs: now}, nil
	}
	takeover := r.State == store.Processing
	r.State, r.StartedAtMs, r.FinishedAtMs, r.LeaseUntilMs = store.Processing, now, 0, now+leaseMs*t.leaseUnit
	r.Attempts++
	r.Token = t.nextToken(r)
	return store.Claim{Outcome: store.Acquired, Token: r.Token, Attempt: r.Attempts, Takeover: takeover, AtMs: now}, nil
}

func (t *Table) held(key store.Key, token uint64) error {
	r, ok := t.rows[key]
	switch {
	case !ok || r.State != store.Processing:
		return fmt.Errorf("%w: %s", store.ErrNotHeld, key)
	case r.Token != token:
		return fmt.Errorf("%w: %s", store.ErrStaleToken, key)
	}
	return nil
}

// Fail deletes the key if token holds it; otherwise it does nothing.
func (t *Table) Fail(_ context.Context, key store.Key, token uint64, _ string) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.held(key, token) == nil {
		delete(t.rows, key)
	}
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
	if r, ok := t.rows[key]; ok {
		return *r, true, nil
	}
	return store.Record{}, false, nil
}

// Cleanup deletes done rows finished retentionMs ago or more.
func (t *Table) Cleanup(_ context.Context, retentionMs int64) ([]store.Key, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []store.Key
	for k, r := range t.rows {
		if r.State == store.Processed && r.FinishedAtMs <= t.now.NowMs()-retentionMs {
			out = append(out, k)
			delete(t.rows, k)
		}
	}
	slices.SortFunc(out, byKey)
	return out, nil
}

// Records lists every row by key.
func (t *Table) Records(context.Context) ([]store.Record, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := []store.Record{}
	for _, r := range t.rows {
		out = append(out, *r)
	}
	slices.SortFunc(out, func(a, b store.Record) int { return byKey(a.Key, b.Key) })
	return out, nil
}

// Ledger lists the ledger by (consumer, event).
func (t *Table) Ledger(context.Context) ([]store.Entry, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := []store.Entry{}
	for _, e := range t.ledger {
		out = append(out, e)
	}
	slices.SortFunc(out, func(a, b store.Entry) int {
		return cmp.Or(cmp.Compare(a.Consumer, b.Consumer), cmp.Compare(a.EventID, b.EventID))
	})
	return out, nil
}

// NowMs is the table's time.
func (t *Table) NowMs(context.Context) (int64, error) { return t.now.NowMs(), nil }

func byKey(a, b store.Key) int {
	return cmp.Or(cmp.Compare(a.Tenant, b.Tenant), cmp.Compare(a.Consumer, b.Consumer), cmp.Compare(a.ID, b.ID))
}

type tx struct {
	t      *Table
	key    store.Key
	token  uint64
	staged []store.Entry
	done   bool
}

func (x *tx) Credit(e store.Entry) { x.staged = append(x.staged, e) }

func (x *tx) Rollback(context.Context) error { x.done = true; return nil }

func (x *tx) Commit(context.Context) (store.CommitResult, error) {
	if x.done {
		return store.CommitResult{}, fmt.Errorf("ttldedupe: unit of work for %s already finished", x.key)
	}
	x.done = true
	t := x.t
	t.mu.Lock()
	defer t.mu.Unlock()
	if err := t.held(x.key, x.token); err != nil {
		return store.CommitResult{}, err
	}
	now := t.now.NowMs()
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
	r.State, r.FinishedAtMs, r.LeaseUntilMs = store.Processed, now, 0
	return res, nil
}
