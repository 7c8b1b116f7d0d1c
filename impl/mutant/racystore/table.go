package racystore

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/idemcheck/idemcheck/impl/contract/clock"
	"github.com/idemcheck/idemcheck/impl/contract/store"
)

type ledgerKey struct{ consumer, eventID string }

// table is the reference store's state and its correct operations (a copy of
// impl/memstore's logic, kept here so that the reference itself is never
// touched by a mutant). The mutants embed it and replace only what their bug
// changes.
type table struct {
	mu        sync.Mutex
	clock     clock.Source
	records   map[store.Key]*store.Record
	ledger    map[ledgerKey]store.Entry
	lastToken uint64
}

func newTable(c clock.Source) *table {
	return &table{
		clock:   c,
		records: map[store.Key]*store.Record{},
		ledger:  map[ledgerKey]store.Entry{},
	}
}

// nextToken is the reference's fencing token source: one counter for the
// whole store, so every token is greater than every earlier one.
func (t *table) nextToken(*store.Record, bool) uint64 {
	t.lastToken++
	return t.lastToken
}

// tokenIssuer picks the fencing token of an acquire; the fencing mutants
// differ from the reference only in this choice.
type tokenIssuer func(r *store.Record, takeover bool) uint64

// claimLocked is the reference claim at time now, with issue choosing the
// token of an acquire.
func (t *table) claimLocked(key store.Key, leaseMs, now int64, issue tokenIssuer) store.Claim {
	r, ok := t.records[key]
	switch {
	case !ok:
		r = &store.Record{Key: key}
		t.records[key] = r
	case r.State == store.Processed:
		return store.Claim{Outcome: store.AlreadyProcessed, AtMs: now}
	case r.State == store.Processing && now < r.LeaseUntilMs:
		return store.Claim{Outcome: store.Locked, AtMs: now}
	}
	takeover := ok && r.State == store.Processing
	r.Token = issue(r, takeover)
	r.State = store.Processing
	r.StartedAtMs = now
	r.FinishedAtMs = 0
	r.Attempts++
	r.LeaseUntilMs = now + leaseMs
	return store.Claim{Outcome: store.Acquired, Token: r.Token, Attempt: r.Attempts, Takeover: takeover, AtMs: now}
}

// checkHeldLocked is the fencing check: the record must be in processing
// under exactly this token.
func (t *table) checkHeldLocked(key store.Key, token uint64) error {
	r, ok := t.records[key]
	if !ok || r.State != store.Processing {
		return fmt.Errorf("%w: %s", store.ErrNotHeld, key)
	}
	if r.Token != token {
		return fmt.Errorf("%w: %s holds token %d, caller has %d", store.ErrStaleToken, key, r.Token, token)
	}
	return nil
}

// Begin implements store.Store with the reference unit of work.
func (t *table) Begin(_ context.Context, key store.Key, token uint64) (store.Tx, error) {
	return &tx{commit: t.commit, key: key, token: token}, nil
}

// commit is the reference commit: fencing check, then entries and mark in
// one step under the lock.
func (t *table) commit(key store.Key, token uint64, staged []store.Entry) (store.CommitResult, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if err := t.checkHeldLocked(key, token); err != nil {
		return store.CommitResult{}, err
	}
	now := t.clock.NowMs()
	res := t.insertAllLocked(staged)
	res.AtMs = now
	t.markProcessedLocked(key, now)
	return res, nil
}

// Fail implements store.Store as the reference does.
func (t *table) Fail(_ context.Context, key store.Key, token uint64, reason string) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.failLocked(key, token, reason)
}

func (t *table) failLocked(key store.Key, token uint64, reason string) error {
	if err := t.checkHeldLocked(key, token); err != nil {
		return err
	}
	r := t.records[key]
	r.State = store.Failed
	r.LastError = reason
	r.LeaseUntilMs = 0
	return nil
}

// Get implements store.Store.
func (t *table) Get(_ context.Context, key store.Key) (store.Record, bool, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	r, ok := t.records[key]
	if !ok {
		return store.Record{}, false, nil
	}
	return *r, true, nil
}

// Cleanup implements store.Store, by the store's own clock.
func (t *table) Cleanup(_ context.Context, retentionMs int64) ([]store.Key, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.purgeLocked(t.clock.NowMs() - retentionMs), nil
}

func (t *table) purgeLocked(cutoff int64) []store.Key {
	var removed []store.Key
	for k, r := range t.records {
		if r.State == store.Processed && r.FinishedAtMs <= cutoff {
			removed = append(removed, k)
			delete(t.records, k)
		}
	}
	slices.SortFunc(removed, compareKeys)
	return removed
}

// Records implements store.Store.
func (t *table) Records(context.Context) ([]store.Record, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.recordsLocked(), nil
}

func (t *table) recordsLocked() []store.Record {
	out := make([]store.Record, 0, len(t.records))
	for _, r := range t.records {
		out = append(out, *r)
	}
	slices.SortFunc(out, func(a, b store.Record) int { return compareKeys(a.Key, b.Key) })
	return out
}

// Ledger implements store.Store.
func (t *table) Ledger(context.Context) ([]store.Entry, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]store.Entry, 0, len(t.ledger))
	for _, e := range t.ledger {
		out = append(out, e)
	}
	slices.SortFunc(out, func(a, b store.Entry) int {
		return cmp.Or(cmp.Compare(a.Consumer, b.Consumer), cmp.Compare(a.EventID, b.EventID))
	})
	return out, nil
}

// NowMs implements store.Store.
func (t *table) NowMs(context.Context) (int64, error) { return t.clock.NowMs(), nil }

// insertAllLocked appends the staged entries the unique constraint allows.
func (t *table) insertAllLocked(staged []store.Entry) store.CommitResult {
	var res store.CommitResult
	for _, e := range staged {
		k := ledgerKey{e.Consumer, e.EventID}
		if _, dup := t.ledger[k]; dup {
			res.DuplicatesIgnored++
			continue
		}
		t.ledger[k] = e
		res.Credited++
	}
	return res
}

// markProcessedLocked settles the record of key at time now.
func (t *table) markProcessedLocked(key store.Key, now int64) {
	r, ok := t.records[key]
	if !ok {
		r = &store.Record{Key: key, StartedAtMs: now}
		t.records[key] = r
	}
	r.State = store.Processed
	r.FinishedAtMs = now
	r.LeaseUntilMs = 0
	r.LastError = ""
}

// tx is the staged unit of work; commit is the store's commit step, which is
// where the lost-commit mutant differs from the reference.
type tx struct {
	commit func(key store.Key, token uint64, staged []store.Entry) (store.CommitResult, error)
	key    store.Key
	token  uint64
	staged []store.Entry
	done   bool
}

// Credit stages a ledger entry.
func (t *tx) Credit(e store.Entry) { t.staged = append(t.staged, e) }

// Rollback discards the staged work.
func (t *tx) Rollback(context.Context) error {
	t.staged, t.done = nil, true
	return nil
}

// Commit hands the staged work to the store's commit step, once.
func (t *tx) Commit(context.Context) (store.CommitResult, error) {
	if t.done {
		return store.CommitResult{}, fmt.Errorf("unit of work for %s already finished", t.key)
	}
	t.done = true
	return t.commit(t.key, t.token, t.staged)
}

func compareKeys(a, b store.Key) int {
	return cmp.Or(cmp.Compare(a.Tenant, b.Tenant), cmp.Compare(a.Consumer, b.Consumer), cmp.Compare(a.ID, b.ID))
}
