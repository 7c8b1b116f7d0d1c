package storetest

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/idemcheck/idemcheck/impl/contract/clock"
	"github.com/idemcheck/idemcheck/impl/contract/store"
)

// toy is a small claim store in the reference's image, with bug planted.
type toy struct {
	bug   bug
	clock clock.Source

	mu        sync.Mutex
	records   []*store.Record // insertion order, so "unsorted" bugs are deterministic
	ledger    []store.Entry
	lastToken uint64
	// sem is the store-wide lock bugBeginLocks holds from Begin to the end
	// of the unit of work.
	sem chan struct{}
	// peers is where bugRacyClaim and bugBusyUnderLoad meet other callers.
	peers *rendezvous
}

func newToy(b bug, c clock.Source) *toy {
	return &toy{bug: b, clock: c, sem: make(chan struct{}, 1), peers: &rendezvous{}}
}

func (s *toy) same(a, b store.Key) bool {
	switch s.bug {
	case bugKeyByString:
		return a.String() == b.String()
	case bugKeyWithoutTenant:
		return a.Consumer == b.Consumer && a.ID == b.ID
	}
	return a == b
}

func (s *toy) find(k store.Key) *store.Record {
	for _, r := range s.records {
		if s.same(r.Key, k) {
			return r
		}
	}
	return nil
}

func (s *toy) now() int64 { return s.clock.NowMs() }

func (s *toy) Claim(ctx context.Context, k store.Key, lease int64) (store.Claim, error) {
	if err := s.waitSem(ctx); err != nil {
		return store.Claim{}, err
	}
	if s.bug == bugBusyUnderLoad && s.peers.meet() {
		return store.Claim{}, fmt.Errorf("database is locked")
	}
	s.mu.Lock()
	now := s.now()
	r := s.find(k)
	if r != nil {
		locked := now < r.LeaseUntilMs
		if s.bug == bugLeaseEndInclusive {
			locked = now <= r.LeaseUntilMs
		}
		switch {
		case r.State == store.Processed && !(s.bug == bugProcessedExpires && !locked):
			s.mu.Unlock()
			return store.Claim{Outcome: store.AlreadyProcessed, AtMs: now}, nil
		case r.State == store.Processing && locked && s.bug != bugIgnoreLease:
			if s.bug == bugAttemptsOnLocked {
				r.Attempts++
			}
			s.mu.Unlock()
			return store.Claim{Outcome: store.Locked, AtMs: now}, nil
		}
	}
	if s.bug == bugRacyClaim {
		// Check, then act: the lock is let go in between.
		s.mu.Unlock()
		s.peers.meet()
		s.mu.Lock()
		r = s.find(k)
	}
	defer s.mu.Unlock()
	takeover := r != nil && r.State == store.Processing
	if r == nil {
		r = &store.Record{Key: k}
		s.records = append(s.records, r)
	}
	if s.bug == bugReclaimIsTakeover {
		takeover = r.Attempts > 0
	}
	r.State = store.Processing
	r.StartedAtMs = now
	r.FinishedAtMs = 0
	r.Attempts++
	s.lastToken++
	r.Token = s.lastToken
	switch s.bug {
	case bugTokenPerRecord:
		r.Token = uint64(r.Attempts)
	case bugTokenFromTime:
		r.Token = uint64(now)
	}
	r.LeaseUntilMs = now + lease
	c := store.Claim{Outcome: store.Acquired, Token: r.Token, Attempt: r.Attempts, Takeover: takeover, AtMs: now}
	if s.bug == bugAttemptFromZero {
		c.Attempt--
	}
	if s.bug == bugNoTakeoverFlag {
		c.Takeover = false
	}
	return c, nil
}

// waitSem waits for bugBeginLocks's lock to be free, as a database call
// waits for a lock another transaction holds.
func (s *toy) waitSem(ctx context.Context) error {
	if s.bug != bugBeginLocks {
		return nil
	}
	select {
	case s.sem <- struct{}{}:
		<-s.sem
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// heldLocked is the fencing check.
func (s *toy) heldLocked(k store.Key, token uint64) error {
	r := s.find(k)
	if r == nil || r.State != store.Processing {
		return fmt.Errorf("%w: %s", store.ErrNotHeld, k)
	}
	if r.Token != token {
		return fmt.Errorf("%w: %s", store.ErrStaleToken, k)
	}
	return nil
}

func (s *toy) Begin(ctx context.Context, k store.Key, token uint64) (store.Tx, error) {
	t := &toyTx{s: s, key: k, token: token}
	switch s.bug {
	case bugBeginLocks:
		select {
		case s.sem <- struct{}{}:
			t.holdsSem = true
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	case bugCheckAtBegin:
		s.mu.Lock()
		t.checkErr = s.heldLocked(k, token)
		s.mu.Unlock()
	}
	return t, nil
}

func (s *toy) Fail(ctx context.Context, k store.Key, token uint64, reason string) error {
	if err := s.waitSem(ctx); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.bug != bugFailNoFencing {
		if err := s.heldLocked(k, token); err != nil {
			return err
		}
	}
	r := s.find(k)
	if r == nil {
		return fmt.Errorf("%w: %s", store.ErrNotHeld, k)
	}
	r.LastError = reason
	if s.bug == bugFailDropsReason {
		r.LastError = ""
	}
	if s.bug == bugFailKeepsLease {
		return nil
	}
	r.State = store.Failed
	r.LeaseUntilMs = 0
	return nil
}

func (s *toy) Get(ctx context.Context, k store.Key) (store.Record, bool, error) {
	if err := s.waitSem(ctx); err != nil {
		return store.Record{}, false, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.bug == bugGetWrongRecord {
		for _, r := range s.records {
			if r.Key.Tenant == k.Tenant && r.Key.ID == k.ID {
				return *r, true, nil
			}
		}
	}
	r := s.find(k)
	if r == nil {
		return store.Record{}, false, nil
	}
	return *r, true, nil
}

func (s *toy) Cleanup(ctx context.Context, retention int64) ([]store.Key, error) {
	if err := s.waitSem(ctx); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	cutoff := s.now() - retention
	var removed []store.Key
	kept := s.records[:0]
	for _, r := range s.records {
		old := r.FinishedAtMs <= cutoff
		if s.bug == bugCleanupExclusive {
			old = r.FinishedAtMs < cutoff
		}
		settled := r.State == store.Processed || s.bug == bugCleanupAnyState
		if settled && old {
			removed = append(removed, r.Key)
			continue
		}
		kept = append(kept, r)
	}
	s.records = kept
	if s.bug == bugCleanupLedger && len(removed) > 0 {
		s.ledger = s.ledger[:len(s.ledger)-1]
	}
	if s.bug != bugCleanupUnsorted {
		slices.SortFunc(removed, compareKeys)
	}
	return removed, nil
}

func compareKeys(a, b store.Key) int {
	return cmp.Or(cmp.Compare(a.Tenant, b.Tenant), cmp.Compare(a.Consumer, b.Consumer), cmp.Compare(a.ID, b.ID))
}

func (s *toy) Records(ctx context.Context) ([]store.Record, error) {
	if err := s.waitSem(ctx); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]store.Record, len(s.records))
	for i, r := range s.records {
		out[i] = *r
	}
	slices.SortFunc(out, func(a, b store.Record) int {
		if s.bug == bugRecordsByString {
			return cmp.Compare(a.Key.String(), b.Key.String())
		}
		return compareKeys(a.Key, b.Key)
	})
	return out, nil
}

func (s *toy) Ledger(ctx context.Context) ([]store.Entry, error) {
	if err := s.waitSem(ctx); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	out := slices.Clone(s.ledger)
	slices.SortStableFunc(out, func(a, b store.Entry) int {
		if s.bug == bugLedgerByEvent {
			return cmp.Compare(a.EventID, b.EventID)
		}
		return cmp.Or(cmp.Compare(a.Consumer, b.Consumer), cmp.Compare(a.EventID, b.EventID))
	})
	return out, nil
}

func (s *toy) NowMs(context.Context) (int64, error) {
	if s.bug == bugNowOffByOne {
		return s.now() + 1, nil
	}
	return s.now(), nil
}

// insertLocked appends e unless the unique constraint forbids it.
func (s *toy) insertLocked(e store.Entry) bool {
	if s.bug == bugCommitDropsColumns {
		e.UserID = ""
	}
	for _, x := range s.ledger {
		dup := x.Consumer == e.Consumer && x.EventID == e.EventID
		switch s.bug {
		case bugNoUnique:
			dup = false
		case bugUniqueOnEvent:
			dup = x.EventID == e.EventID
		}
		if dup {
			return false
		}
	}
	s.ledger = append(s.ledger, e)
	return true
}

type toyTx struct {
	s        *toy
	key      store.Key
	token    uint64
	staged   []store.Entry
	done     bool
	holdsSem bool
	checkErr error
}

func (t *toyTx) Credit(e store.Entry) { t.staged = append(t.staged, e) }

func (t *toyTx) release() {
	if t.holdsSem {
		t.holdsSem = false
		<-t.s.sem
	}
}

func (t *toyTx) Rollback(context.Context) error {
	defer t.release()
	if t.s.bug == bugRollbackApplies && !t.done {
		t.s.mu.Lock()
		for _, e := range t.staged {
			t.s.insertLocked(e)
		}
		t.s.mu.Unlock()
	}
	t.staged, t.done = nil, true
	return nil
}

func (t *toyTx) Commit(ctx context.Context) (store.CommitResult, error) {
	defer t.release()
	if t.done {
		return store.CommitResult{}, fmt.Errorf("unit of work already finished")
	}
	t.done = true
	s := t.s
	if s.bug == bugBusyUnderLoad && s.peers.meet() {
		return store.CommitResult{}, fmt.Errorf("database is locked")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	res := store.CommitResult{AtMs: s.now()}
	insert := func() error {
		for _, e := range t.staged {
			if s.insertLocked(e) {
				res.Credited++
				continue
			}
			if s.bug == bugDuplicateAborts {
				return fmt.Errorf("unique violation")
			}
			res.DuplicatesIgnored++
		}
		return nil
	}
	if s.bug == bugEffectBeforeCheck {
		if err := insert(); err != nil {
			return store.CommitResult{}, err
		}
	}
	var err error
	switch s.bug {
	case bugNoFencing:
	case bugCheckAtBegin:
		err = t.checkErr
	case bugMarkCreatesRecord:
		if s.find(t.key) != nil {
			err = s.heldLocked(t.key, t.token)
		}
	default:
		err = s.heldLocked(t.key, t.token)
	}
	if r := s.find(t.key); err == nil && s.bug == bugLateCommitRefused && r.LeaseUntilMs <= res.AtMs {
		err = fmt.Errorf("%w: lease ran out", store.ErrStaleToken)
	}
	if err != nil {
		return store.CommitResult{}, err
	}
	if s.bug != bugEffectBeforeCheck {
		if err := insert(); err != nil {
			return store.CommitResult{}, err
		}
	}
	r := s.find(t.key)
	if r == nil {
		r = &store.Record{Key: t.key, StartedAtMs: res.AtMs}
		s.records = append(s.records, r)
	}
	r.State = store.Processed
	r.FinishedAtMs = res.AtMs
	if s.bug == bugFinishedAtClaim {
		r.FinishedAtMs = r.StartedAtMs
	}
	if s.bug != bugLeaseKeptOnCommit {
		r.LeaseUntilMs = 0
	}
	return res, nil
}
