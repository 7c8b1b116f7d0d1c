package racystore

import (
	"context"

	"github.com/idemcheck/idemcheck/impl/contract/clock"
	"github.com/idemcheck/idemcheck/impl/contract/store"
)

// flushEvery is how many commits the lost-commit mutant buffers before it
// writes its cache back. Small enough that the cache does get flushed (and
// drops what no longer matches) many times in a run, large enough that other
// workers claim committed keys before the flush.
const flushEvery = 8

// LostCommit is a mutant with a write-back cache in front of its records
// table. A commit checks the token, writes the ledger, puts the processed
// mark in the cache and reports success; the cache is written back every
// flushEvery commits. Claims go straight to the table (they need its row
// lock), so they do not see a cached mark: a claim after a reported commit
// answers locked, or takes the lease over, and the write-back then finds a
// different token on the row and silently drops the mark. The commit
// reported success and is lost.
type LostCommit struct {
	*table
	// dirty holds the processed marks not yet written back, by key. It is
	// guarded by table.mu.
	dirty   map[store.Key]cachedMark
	commits int
}

// cachedMark is a processed mark waiting in the write-back cache.
type cachedMark struct {
	token      uint64
	finishedAt int64
}

// NewLostCommit returns the lost-commit mutant over clock c.
func NewLostCommit(c clock.Source) *LostCommit {
	return &LostCommit{table: newTable(c), dirty: map[store.Key]cachedMark{}}
}

var _ store.Store = (*LostCommit)(nil)

// Claim is the reference claim on the table beneath the cache.
func (s *LostCommit) Claim(_ context.Context, key store.Key, leaseMs int64) (store.Claim, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.claimLocked(key, leaseMs, s.clock.NowMs(), s.nextToken), nil
}

// Begin opens a unit of work whose commit lands in the cache.
func (s *LostCommit) Begin(_ context.Context, key store.Key, token uint64) (store.Tx, error) {
	return &tx{commit: s.commit, key: key, token: token}, nil
}

func (s *LostCommit) commit(key store.Key, token uint64, staged []store.Entry) (store.CommitResult, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.checkHeldLocked(key, token); err != nil {
		return store.CommitResult{}, err
	}
	now := s.clock.NowMs()
	res := s.insertAllLocked(staged)
	res.AtMs = now
	s.dirty[key] = cachedMark{token: token, finishedAt: now}
	s.commits++
	if s.commits%flushEvery == 0 {
		s.flushLocked()
	}
	return res, nil
}

// flushLocked writes the cache back. A mark whose row no longer carries its
// token is dropped without a word: the bug.
func (s *LostCommit) flushLocked() {
	for key, m := range s.dirty {
		if r, ok := s.records[key]; ok && r.State == store.Processing && r.Token == m.token {
			s.markProcessedLocked(key, m.finishedAt)
		}
		delete(s.dirty, key)
	}
}

// Get reads through the cache, so a reader sees its own commit.
func (s *LostCommit) Get(_ context.Context, key store.Key) (store.Record, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.records[key]
	if !ok {
		return store.Record{}, false, nil
	}
	out := *r
	if m, cached := s.dirty[key]; cached && r.State == store.Processing && r.Token == m.token {
		out.State = store.Processed
		out.FinishedAtMs = m.finishedAt
		out.LeaseUntilMs = 0
		out.LastError = ""
	}
	return out, true, nil
}

// Records flushes the cache first, as a checkpoint would.
func (s *LostCommit) Records(context.Context) ([]store.Record, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.flushLocked()
	return s.recordsLocked(), nil
}

// Cleanup flushes the cache first, as a checkpoint would.
func (s *LostCommit) Cleanup(_ context.Context, retentionMs int64) ([]store.Key, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.flushLocked()
	return s.purgeLocked(s.clock.NowMs() - retentionMs), nil
}
