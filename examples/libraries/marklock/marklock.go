// Package marklock is a library-shaped example: a processed-messages table
// where a consumer marks a message "processing" before it handles it, with
// no lease — the mark records when it was made, not until when it holds.
// A mark holds the key until the consumer completes it (status "done") or
// releases it after a failure (the mark is deleted); a mark older than the
// table's abandon timeout is taken for one a dead consumer left, and is
// swept before any claim or read, so that the message can be processed
// again. Done rows stay until the retention job (Cleanup) removes them.
//
// It reads the machine's clock (time.Now) and takes none, as most such
// code does. It knows nothing of idemcheck beyond the store contract it
// implements; its test declares its marks (store.Conventions{Lease:
// store.LeaseNone, UnsettledExpiryMs: abandon, FailedAttempt:
// store.FailedAttemptDeleted}) and checks it through idemcheck's public
// API only, every check playing in testing/synctest bubbles.
//
// Version 1 (NewV1) had no sweep: the mark of a consumer that died stayed
// for ever, and the message was never processed.
package marklock

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

// Table is the processed-messages table and the ledger beside it.
type Table struct {
	mu      sync.Mutex
	abandon int64 // ms after which a mark is taken for abandoned
	rows    map[store.Key]*store.Record
	ledger  map[[2]string]store.Entry
	seq     uint64 // the fencing token sequence, one for the table
	v1      bool
}

// New returns an empty table whose marks are swept abandon after they
// were made.
func New(abandon time.Duration) *Table {
	return &Table{abandon: abandon.Milliseconds(), rows: map[store.Key]*store.Record{}, ledger: map[[2]string]store.Entry{}}
}

// NewV1 is the table as version 1 shipped it: no sweep.
func NewV1(abandon time.Duration) *Table {
	t := New(abandon)
	t.v1 = true
	return t
}

func nowMs() int64 { return time.Now().UnixMilli() }

// sweep deletes the abandoned marks: those made abandon ago or more.
func (t *Table) sweep(now int64) {
	if t.v1 {
		return
	}
	for k, r := range t.rows {
		if r.State == store.Processing && r.StartedAtMs <= now-t.abandon {
			delete(t.rows, k)
		}
	}
}

// Claim marks key processing unless it is done or marked. leaseMs is not
// used: a mark holds until it is completed, released or swept.
func (t *Table) Claim(_ context.Context, key store.Key, _ int64) (store.Claim, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := nowMs()
	t.sweep(now)
	if r, ok := t.rows[key]; ok {
		if r.State == store.Processed {
			return store.Claim{Outcome: store.AlreadyProcessed, AtMs: now}, nil
		}
		return store.Claim{Outcome: store.Locked, AtMs: now}, nil
	}
	t.seq++
	t.rows[key] = &store.Record{Key: key, State: store.Processing, StartedAtMs: now, Attempts: 1, Token: t.seq}
	return store.Claim{Outcome: store.Acquired, Token: t.seq, Attempt: 1, AtMs: now}, nil
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

// Fail deletes the mark, so that the message can be processed again.
func (t *Table) Fail(_ context.Context, key store.Key, token uint64, _ string) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.sweep(nowMs())
	if err := t.held(key, token); err != nil {
		return err
	}
	delete(t.rows, key)
	return nil
}

// Begin opens a unit of work; the mark is checked on commit.
func (t *Table) Begin(_ context.Context, key store.Key, token uint64) (store.Tx, error) {
	return &tx{t: t, key: key, token: token}, nil
}

// Get reads one row.
func (t *Table) Get(_ context.Context, key store.Key) (store.Record, bool, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.sweep(nowMs())
	if r, ok := t.rows[key]; ok {
		return *r, true, nil
	}
	return store.Record{}, false, nil
}

// Cleanup deletes done rows finished retentionMs ago or more.
func (t *Table) Cleanup(_ context.Context, retentionMs int64) ([]store.Key, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := nowMs()
	t.sweep(now)
	var out []store.Key
	for k, r := range t.rows {
		if r.State == store.Processed && r.FinishedAtMs <= now-retentionMs {
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
	t.sweep(nowMs())
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
	return slices.SortedFunc(maps.Values(t.ledger), func(a, b store.Entry) int {
		return cmp.Or(cmp.Compare(a.Consumer, b.Consumer), cmp.Compare(a.EventID, b.EventID))
	}), nil
}

// NowMs is the table's time.
func (t *Table) NowMs(context.Context) (int64, error) { return nowMs(), nil }

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

// Commit checks the mark, then lands the entries and marks the row done,
// in one transaction.
func (x *tx) Commit(context.Context) (store.CommitResult, error) {
	if x.done {
		return store.CommitResult{}, fmt.Errorf("marklock: unit of work for %s already finished", x.key)
	}
	x.done = true
	t := x.t
	t.mu.Lock()
	defer t.mu.Unlock()
	now := nowMs()
	t.sweep(now)
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
	r.State, r.FinishedAtMs = store.Processed, now
	return res, nil
}
