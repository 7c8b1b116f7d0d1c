package mutant

import (
	"context"
	"runtime"
	"sync"

	"github.com/idemcheck/idemcheck/impl/contract/clock"
	"github.com/idemcheck/idemcheck/impl/contract/store"
	"github.com/idemcheck/idemcheck/impl/reference/memstore"
)

// The claim stores below break only under real concurrency or across a
// lease takeover: the bugs a sequential test of one worker never meets, and
// that the linearizability check (package linearizability) exists to catch.
// Each wraps the reference store, correct in everything but its named bug.

// claimWithoutRowLock claims in two statements.
type claimWithoutRowLock struct{ *memstore.Store }

// NewClaimWithoutRowLock is a store whose claim reads the record, decides,
// and writes the acquisition in a second statement without a lock across
// the two: the SELECT-then-UPDATE without a row lock or a conditional
// update. Two workers that read the same free record both acquire it.
func NewClaimWithoutRowLock(c clock.Source) store.Store { return claimWithoutRowLock{memstore.New(c)} }

func (s claimWithoutRowLock) Claim(ctx context.Context, key store.Key, leaseMs int64) (store.Claim, error) {
	rec, exists, err := s.Get(ctx, key)
	if err != nil {
		return store.Claim{}, err
	}
	now, _ := s.NowMs(ctx)
	switch {
	case exists && rec.State == store.Processed:
		return store.Claim{Outcome: store.AlreadyProcessed, AtMs: now}, nil
	case exists && rec.State == store.Processing && now < rec.LeaseUntilMs:
		return store.Claim{Outcome: store.Locked, AtMs: now}, nil
	}
	// The window between the read and the write: in a real store, the
	// round trip between the SELECT and the UPDATE. Yielding here makes it
	// as real under the Go scheduler as it is over a network.
	runtime.Gosched()
	// A blind write of what the stale read decided.
	token, err := s.PutProcessing(ctx, key, leaseMs)
	if err != nil {
		return store.Claim{}, err
	}
	return store.Claim{Outcome: store.Acquired, Token: token, Attempt: rec.Attempts + 1,
		Takeover: exists && rec.State == store.Processing, AtMs: now}, nil
}

// shownTokens is a store that hands out tokens of its own choosing in place
// of the reference's: the shape of the two token bugs below. Callers hold
// shown tokens; the store maps the current one of a key to the reference's
// token and every other to none, so that only the holder of the current
// shown token is let through — however many holders share it.
type shownTokens struct {
	*memstore.Store
	mu      sync.Mutex
	current map[store.Key][2]uint64 // key -> {shown, reference} of the current holder
	issue   func(key store.Key, c store.Claim, prev [2]uint64) uint64
	onFail  func(key store.Key)
}

func newShownTokens(c clock.Source) *shownTokens {
	return &shownTokens{Store: memstore.New(c), current: map[store.Key][2]uint64{}}
}

func (s *shownTokens) Claim(ctx context.Context, key store.Key, leaseMs int64) (store.Claim, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, err := s.Store.Claim(ctx, key, leaseMs)
	if err != nil || c.Outcome != store.Acquired {
		return c, err
	}
	shown := s.issue(key, c, s.current[key])
	s.current[key] = [2]uint64{shown, c.Token}
	c.Token = shown
	return c, nil
}

// reference maps a shown token to the reference's: only the current one
// maps to anything.
func (s *shownTokens) reference(key store.Key, shown uint64) uint64 {
	if cur := s.current[key]; cur[0] == shown {
		return cur[1]
	}
	return 0
}

func (s *shownTokens) Begin(ctx context.Context, key store.Key, token uint64) (store.Tx, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.Store.Begin(ctx, key, s.reference(key, token))
}

func (s *shownTokens) Fail(ctx context.Context, key store.Key, token uint64, reason string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.Store.Fail(ctx, key, s.reference(key, token), reason); err != nil {
		return err
	}
	if s.onFail != nil {
		s.onFail(key)
	}
	return nil
}

func (s *shownTokens) Get(ctx context.Context, key store.Key) (store.Record, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok, err := s.Store.Get(ctx, key)
	if cur := s.current[key]; ok && r.Token == cur[1] {
		r.Token = cur[0]
	}
	return r, ok, err
}

// NewTakeoverKeepsToken is a store that treats a takeover as a renewal of
// the expired lease: the new holder is given the old holder's fencing token.
// The slow old holder then passes the fencing check as if it were the new
// one (fencing tokens reused).
func NewTakeoverKeepsToken(c clock.Source) store.Store {
	s := newShownTokens(c)
	s.issue = func(_ store.Key, c store.Claim, prev [2]uint64) uint64 {
		if c.Takeover {
			return prev[0]
		}
		return c.Token
	}
	return s
}

// NewFailResetsToken is a store whose fencing token is a per-record version
// (the row's token column plus one) and whose Fail "releases the lock" by
// zeroing that column. The next claim after a failure is issued token 1
// again, lower than tokens already handed out: a holder that lost its lease
// long ago with token 1 can commit over the new holder (fencing tokens
// decreasing and reused).
func NewFailResetsToken(c clock.Source) store.Store {
	s := newShownTokens(c)
	version := map[store.Key]uint64{}
	s.issue = func(key store.Key, _ store.Claim, _ [2]uint64) uint64 {
		version[key]++
		return version[key]
	}
	s.onFail = func(key store.Key) { version[key] = 0 }
	return s
}

// flushEvery is how many commits the write-back mutant buffers before it
// writes its cache back. Small enough that the cache does get flushed (and
// drops what no longer matches) many times in a run, large enough that
// other workers claim committed keys before the flush.
const flushEvery = 8

// commitLostInWriteBack has a write-back cache in front of its records.
type commitLostInWriteBack struct {
	*memstore.Store
	mu      sync.Mutex
	dirty   map[store.Key]cachedMark // processed marks not yet written back
	commits int
}

// NewCommitLostInWriteBack is a store with a write-back cache in front of
// its records table. A commit checks the token, writes the ledger, puts the
// processed mark in the cache and reports success; the cache is written
// back every flushEvery commits. Claims go straight to the table (they need
// its row lock), so they do not see a cached mark: a claim after a reported
// commit answers locked, or takes the lease over, and the write-back then
// finds a different token on the row and silently drops the mark. The
// commit reported success and is lost.
func NewCommitLostInWriteBack(c clock.Source) store.Store {
	return &commitLostInWriteBack{Store: memstore.New(c), dirty: map[store.Key]cachedMark{}}
}

// cachedMark is a processed mark waiting in the write-back cache.
type cachedMark struct {
	token uint64
	atMs  int64
}

func (s *commitLostInWriteBack) Claim(ctx context.Context, key store.Key, leaseMs int64) (store.Claim, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.Store.Claim(ctx, key, leaseMs)
}

func (s *commitLostInWriteBack) Begin(_ context.Context, key store.Key, token uint64) (store.Tx, error) {
	return &cachedTx{s: s, key: key, token: token}, nil
}

// cachedTx is a unit of work whose commit lands in the cache.
type cachedTx struct {
	s      *commitLostInWriteBack
	key    store.Key
	token  uint64
	staged []store.Entry
	done   bool
}

func (t *cachedTx) Credit(e store.Entry)           { t.staged = append(t.staged, e) }
func (t *cachedTx) Rollback(context.Context) error { t.staged, t.done = nil, true; return nil }

func (t *cachedTx) Commit(ctx context.Context) (store.CommitResult, error) {
	if t.done {
		return store.CommitResult{}, store.ErrNotHeld
	}
	t.done = true
	s := t.s
	s.mu.Lock()
	defer s.mu.Unlock()
	// The fencing check, against the table.
	r, ok, err := s.Store.Get(ctx, t.key)
	switch {
	case err != nil:
		return store.CommitResult{}, err
	case !ok || r.State != store.Processing:
		return store.CommitResult{}, store.ErrNotHeld
	case r.Token != t.token:
		return store.CommitResult{}, store.ErrStaleToken
	}
	now, _ := s.NowMs(ctx)
	res := store.CommitResult{AtMs: now}
	for _, e := range t.staged {
		if inserted, err := s.InsertEntry(ctx, e); err != nil {
			return res, err
		} else if inserted {
			res.Credited++
		} else {
			res.DuplicatesIgnored++
		}
	}
	s.dirty[t.key] = cachedMark{token: t.token, atMs: now}
	s.commits++
	if s.commits%flushEvery == 0 {
		s.flushLocked(ctx)
	}
	return res, nil
}

// flushLocked writes the cache back. A mark whose row no longer carries its
// token is dropped without a word: the bug.
func (s *commitLostInWriteBack) flushLocked(ctx context.Context) {
	for key, m := range s.dirty {
		if r, ok, _ := s.Store.Get(ctx, key); ok && r.State == store.Processing && r.Token == m.token {
			_ = s.MarkProcessed(ctx, key)
		}
		delete(s.dirty, key)
	}
}

// Get reads through the cache, so a reader sees its own commit.
func (s *commitLostInWriteBack) Get(ctx context.Context, key store.Key) (store.Record, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok, err := s.Store.Get(ctx, key)
	if m, cached := s.dirty[key]; ok && cached && r.State == store.Processing && r.Token == m.token {
		r.State, r.FinishedAtMs, r.LeaseUntilMs, r.LastError = store.Processed, m.atMs, 0, ""
	}
	return r, ok, err
}

// Records flushes the cache first, as a checkpoint would.
func (s *commitLostInWriteBack) Records(ctx context.Context) ([]store.Record, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.flushLocked(ctx)
	return s.Store.Records(ctx)
}

// Cleanup flushes the cache first, as a checkpoint would.
func (s *commitLostInWriteBack) Cleanup(ctx context.Context, retentionMs int64) ([]store.Key, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.flushLocked(ctx)
	return s.Store.Cleanup(ctx, retentionMs)
}
