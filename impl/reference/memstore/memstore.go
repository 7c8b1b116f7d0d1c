// Package memstore is the in-memory reference implementation of the store
// contract: claim records with leases and fencing tokens, a unique ledger and
// a unit of work whose commit checks the token before anything lands.
//
// Besides the contract it offers statement-level access to its tables
// (store.Tables), which naive consumer code — the harness's mutants — uses.
package memstore

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"

	"github.com/idemcheck/idemcheck/impl/contract/clock"
	"github.com/idemcheck/idemcheck/impl/contract/store"
)

type ledgerKey struct{ consumer, eventID string }

// Store is the reference in-memory store. It is safe for concurrent use: one
// mutex makes every operation, including a commit, a single atomic step.
type Store struct {
	mu      sync.Mutex
	clock   clock.Source
	records map[store.Key]*store.Record
	ledger  map[ledgerKey]store.Entry
	// byKey and entries remember the records and the ledger in the order
	// Records and Ledger return them (see sortedLocked): a check reads both
	// after every write, and sorting them each time cost more than the
	// write.
	byKey     []*store.Record
	entries   []store.Entry
	lastToken uint64
	conv      store.Conventions
}

// New returns an empty store that tells time by c (the store's own clock),
// with the reference conventions (the zero store.Conventions).
func New(c clock.Source) *Store {
	return &Store{
		clock:   c,
		records: map[store.Key]*store.Record{},
		ledger:  map[ledgerKey]store.Entry{},
	}
}

// NewWithConventions returns an empty store that keeps conv: the correct
// store of each convention a library may legitimately choose. An unknown
// convention is an error.
func NewWithConventions(c clock.Source, conv store.Conventions) (*Store, error) {
	if err := conv.Validate(); err != nil {
		return nil, err
	}
	s := New(c)
	s.conv = conv
	return s, nil
}

// Conventions returns the conventions the store keeps.
func (s *Store) Conventions() store.Conventions { return s.conv }

var _ store.Store = (*Store)(nil)

// nextToken issues a fencing token. One counter for the whole store makes every
// token strictly greater than any earlier one, for every key, even after a
// record is cleaned up and claimed anew.
func (s *Store) nextToken() uint64 {
	s.lastToken++
	return s.lastToken
}

// Claim implements store.Store.
func (s *Store) Claim(_ context.Context, key store.Key, leaseMs int64) (store.Claim, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.clock.NowMs()
	s.expireLocked(now)
	return s.claimLocked(key, leaseMs, now), nil
}

// expireLocked removes what the conventions say is gone by now: processed
// records past the library's own expiry, unsettled records past their own
// (UnsettledExpiryMs), and records whose lease ran out when expired leases
// vanish. The store-wide token counter keeps later tokens above theirs.
func (s *Store) expireLocked(now int64) {
	if s.conv.Expiry != store.ExpiryByLibrary && s.conv.ExpiredLease != store.ExpiredLeaseVanishes && s.conv.UnsettledExpiryMs == 0 {
		return
	}
	for k, r := range s.records {
		switch {
		case r.State == store.Processed && s.conv.Expiry == store.ExpiryByLibrary && now >= s.expiresAt(r):
			delete(s.records, k)
		case s.conv.UnsettledGone(r.State, r.StartedAtMs, r.LeaseUntilMs, now):
			delete(s.records, k)
		}
	}
}

// expiresAt is when the library's own expiry removes the processed record
// r. Where the declared removal is a range (ExpiryLatestMs), each record
// goes at its own point of it, drawn from its token, so that the checks
// see removals early, late and in between, as a sweep's are.
func (s *Store) expiresAt(r *store.Record) int64 {
	at := s.conv.ExpiryStartMs(r.StartedAtMs, r.FinishedAtMs) + s.conv.ExpiryMs
	if spread := s.conv.ExpiryLatest() - s.conv.ExpiryMs; spread > 0 {
		at += int64(r.Token % uint64(spread+1))
	}
	return at
}

func (s *Store) claimLocked(key store.Key, leaseMs, now int64) store.Claim {
	r, ok := s.records[key]
	switch {
	case !ok:
		r = &store.Record{Key: key}
		s.records[key] = r
	case r.State == store.Processed:
		return store.Claim{Outcome: store.AlreadyProcessed, AtMs: now}
	case r.State == store.Processing && s.conv.Holds(r.StartedAtMs, r.LeaseUntilMs, now):
		return store.Claim{Outcome: s.conv.BusyOutcome(), AtMs: now}
	}
	return s.acquireLocked(r, leaseMs, now)
}

// acquireLocked puts r in processing under a new token and lease.
func (s *Store) acquireLocked(r *store.Record, leaseMs, now int64) store.Claim {
	takeover := r.State == store.Processing
	r.State = store.Processing
	r.StartedAtMs = now
	r.FinishedAtMs = 0
	r.Attempts++
	r.Token = s.nextToken()
	r.LeaseUntilMs = s.conv.LeaseUntilMs(now, leaseMs)
	return store.Claim{Outcome: store.Acquired, Token: r.Token, Attempt: r.Attempts, Takeover: takeover, AtMs: now}
}

// Begin implements store.Store. The token is checked on Commit, not here: a
// lease may be taken over while the unit of work is open.
func (s *Store) Begin(_ context.Context, key store.Key, token uint64) (store.Tx, error) {
	return &tx{s: s, key: key, token: token}, nil
}

// checkHeldLocked is the fencing check: the record must be in processing
// under exactly this token.
func (s *Store) checkHeldLocked(key store.Key, token uint64) error {
	r, ok := s.records[key]
	if !ok || r.State != store.Processing {
		if s.conv.Refusal == store.RefusalOneError {
			// One error for every refusal, as such a library has.
			return fmt.Errorf("%w: %s: claim lost", store.ErrStaleToken, key)
		}
		return fmt.Errorf("%w: %s", store.ErrNotHeld, key)
	}
	if r.Token != token {
		return fmt.Errorf("%w: %s holds token %d, caller has %d", store.ErrStaleToken, key, r.Token, token)
	}
	return nil
}

// Fail implements store.Store.
func (s *Store) Fail(_ context.Context, key store.Key, token uint64, reason string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.expireLocked(s.clock.NowMs())
	if err := s.checkHeldLocked(key, token); err != nil {
		if s.conv.StaleRelease == store.StaleReleaseNoOp {
			return nil
		}
		return err
	}
	switch s.conv.FailedAttempt {
	case store.FailedAttemptKeptMark:
		// The mark stays until its lease runs out.
		return nil
	case store.FailedAttemptDeleted:
		// The store-wide token counter keeps the next claim's token above
		// this one, although the record that held it is gone.
		delete(s.records, key)
		return nil
	}
	r := s.records[key]
	r.State = store.Failed
	r.LastError = reason
	r.LeaseUntilMs = 0
	return nil
}

// Get implements store.Store.
func (s *Store) Get(_ context.Context, key store.Key) (store.Record, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.expireLocked(s.clock.NowMs())
	r, ok := s.records[key]
	if !ok {
		return store.Record{}, false, nil
	}
	return *r, true, nil
}

// Cleanup implements store.Store, by the store's own clock.
func (s *Store) Cleanup(_ context.Context, retentionMs int64) ([]store.Key, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.clock.NowMs()
	s.expireLocked(now)
	if s.conv.Expiry == store.ExpiryByLibrary {
		return nil, nil // the library expires its records itself: no retention call
	}
	return s.purgeLocked(now - retentionMs), nil
}

// purgeLocked deletes processed records finished at or before cutoff.
func (s *Store) purgeLocked(cutoff int64) []store.Key {
	var removed []store.Key
	for k, r := range s.records {
		if r.State == store.Processed && r.FinishedAtMs <= cutoff {
			removed = append(removed, k)
			delete(s.records, k)
		}
	}
	slices.SortFunc(removed, compareKeys)
	return removed
}

// Records implements store.Store.
func (s *Store) Records(context.Context) ([]store.Record, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.expireLocked(s.clock.NowMs())
	byKey := s.sortedLocked()
	out := make([]store.Record, len(byKey))
	for i, r := range byKey {
		out[i] = *r
	}
	return out, nil
}

// Ledger implements store.Store.
func (s *Store) Ledger(context.Context) ([]store.Entry, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.entries) != len(s.ledger) {
		// Entries are only ever added, by insertLocked, which keeps the
		// order: a count that differs means the order was never built.
		s.entries = slices.SortedFunc(maps.Values(s.ledger), CompareEntries)
	}
	return slices.Clone(s.entries), nil
}

// sortedLocked returns the records in key order. The order is remembered
// and used again for as long as it holds exactly the records in the map:
// claims and cleanups, which add and remove records, make it build again.
func (s *Store) sortedLocked() []*store.Record {
	valid := len(s.byKey) == len(s.records)
	for i := 0; valid && i < len(s.byKey); i++ {
		valid = s.records[s.byKey[i].Key] == s.byKey[i]
	}
	if !valid {
		s.byKey = s.byKey[:0]
		for _, r := range s.records {
			s.byKey = append(s.byKey, r)
		}
		slices.SortFunc(s.byKey, func(a, b *store.Record) int { return compareKeys(a.Key, b.Key) })
	}
	return s.byKey
}

// NowMs implements store.Store.
func (s *Store) NowMs(context.Context) (int64, error) { return s.clock.NowMs(), nil }

// insertLocked appends e unless the unique constraint forbids it.
func (s *Store) insertLocked(e store.Entry) bool {
	k := ledgerKey{e.Consumer, e.EventID}
	if _, dup := s.ledger[k]; dup {
		return false
	}
	if len(s.entries) == len(s.ledger) {
		i, _ := slices.BinarySearchFunc(s.entries, e, CompareEntries)
		s.entries = slices.Insert(s.entries, i, e)
	}
	s.ledger[k] = e
	return true
}

// markProcessedLocked settles the record at time now.
func (s *Store) markProcessedLocked(key store.Key, now int64) {
	r, ok := s.records[key]
	if !ok {
		r = &store.Record{Key: key, StartedAtMs: now}
		s.records[key] = r
	}
	r.State = store.Processed
	r.FinishedAtMs = now
	r.LeaseUntilMs = 0
	r.LastError = ""
}

// Clone returns an independent copy of the store over the clock c, for a
// search that forks a run.
func (s *Store) Clone(c clock.Source) *Store {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := &Store{clock: c, records: make(map[store.Key]*store.Record, len(s.records)), ledger: maps.Clone(s.ledger), lastToken: s.lastToken, conv: s.conv}
	for k, r := range s.records {
		cp := *r
		out.records[k] = &cp
	}
	return out
}

// CloneTx copies a unit of work this package opened onto the clone s, and
// reports false for any other unit of work.
func CloneTx(t store.Tx, s *Store) (store.Tx, bool) {
	x, ok := t.(*tx)
	if !ok {
		return nil, false
	}
	cp := *x
	cp.s = s
	cp.staged = slices.Clone(x.staged)
	return &cp, true
}

type tx struct {
	s      *Store
	key    store.Key
	token  uint64
	staged []store.Entry
	done   bool
}

func (t *tx) Credit(e store.Entry) { t.staged = append(t.staged, e) }

func (t *tx) Rollback(context.Context) error {
	t.staged, t.done = nil, true
	return nil
}

// Commit checks the fencing token first, then lands entries and mark together.
func (t *tx) Commit(context.Context) (store.CommitResult, error) {
	if t.done {
		return store.CommitResult{}, fmt.Errorf("unit of work for %s already finished", t.key)
	}
	t.done = true
	s := t.s
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.clock.NowMs()
	s.expireLocked(now)
	if err := s.checkHeldLocked(t.key, t.token); err != nil {
		return store.CommitResult{}, err
	}
	if r := s.records[t.key]; s.conv.LateCommit == store.LateCommitRefused && !s.conv.LeaseHolds(now, r.LeaseUntilMs) {
		return store.CommitResult{}, fmt.Errorf("%w: %s: the lease ran out at %d, before the commit at %d", store.ErrStaleToken, t.key, r.LeaseUntilMs, now)
	}
	res := store.CommitResult{AtMs: now}
	for _, e := range t.staged {
		if s.insertLocked(e) {
			res.Credited++
		} else {
			res.DuplicatesIgnored++
		}
	}
	s.markProcessedLocked(t.key, now)
	return res, nil
}

func compareKeys(a, b store.Key) int {
	return cmp.Or(cmp.Compare(a.Tenant, b.Tenant), cmp.Compare(a.Consumer, b.Consumer), cmp.Compare(a.ID, b.ID))
}

// CompareEntries orders ledger entries by (Consumer, EventID), the order the
// contract's Ledger method returns them in.
func CompareEntries(a, b store.Entry) int {
	return cmp.Or(cmp.Compare(a.Consumer, b.Consumer), cmp.Compare(a.EventID, b.EventID))
}
