package mutant

import (
	"context"
	"sync"

	"github.com/idemcheck/idemcheck/impl/contract/clock"
	"github.com/idemcheck/idemcheck/impl/contract/store"
	"github.com/idemcheck/idemcheck/impl/reference/memstore"
)

// The conventions each convention mutant declares: the checks must still
// bite under every legitimate convention.
var (
	InclusiveLease = store.Conventions{LeaseEnd: store.LeaseEndInclusive}
	DeleteOnFail   = store.Conventions{FailedAttempt: store.FailedAttemptDeleted}
	SilentRelease  = store.Conventions{StaleRelease: store.StaleReleaseNoOp}
	MarkOnClaim    = store.Conventions{ClaimMark: store.ClaimMarkOnClaim}
)

func conventional(c clock.Source, conv store.Conventions) *memstore.Store {
	s, err := memstore.NewWithConventions(c, conv)
	if err != nil {
		panic(err) // the conventions above are valid
	}
	return s
}

// leaseExpiresBeforeDeclaredEnd declares InclusiveLease but ends leases
// exclusively.
type leaseExpiresBeforeDeclaredEnd struct{ *memstore.Store }

// NewLeaseExpiresBeforeDeclaredEnd is a store that declares its leases hold
// at their expiry instant (InclusiveLease) but lets a claim at exactly that
// instant take over: the holder, trusting the declared end, still works
// while a second worker holds the key.
func NewLeaseExpiresBeforeDeclaredEnd(c clock.Source) store.Store {
	return leaseExpiresBeforeDeclaredEnd{conventional(c, store.Conventions{})}
}

// failDeleteRestartsTokens deletes a failed (or cleaned up) record and
// numbers tokens per record.
type failDeleteRestartsTokens struct {
	*memstore.Store
	mu     sync.Mutex
	issued map[store.Key][]uint64 // the inner tokens of the record's life, in order
}

// NewFailDeleteRestartsTokens is a store that deletes a failed attempt's
// record (DeleteOnFail) and numbers fencing tokens per record, so the tokens
// restart at 1 once the record is gone: the worker whose claim was failed or
// cleaned up holds a token equal to the next holder's, and its commit lands.
func NewFailDeleteRestartsTokens(c clock.Source) store.Store {
	return &failDeleteRestartsTokens{Store: conventional(c, DeleteOnFail), issued: map[store.Key][]uint64{}}
}

// inner is the store's own token for the per-record token t: the bug is
// that a token of an earlier life of the record maps to this life's.
func (s *failDeleteRestartsTokens) inner(key store.Key, t uint64) uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	if l := s.issued[key]; t >= 1 && t <= uint64(len(l)) {
		return l[t-1]
	}
	return t
}

func (s *failDeleteRestartsTokens) outer(r store.Record) store.Record {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, t := range s.issued[r.Key] {
		if t == r.Token {
			r.Token = uint64(i + 1)
		}
	}
	return r
}

func (s *failDeleteRestartsTokens) forget(key store.Key) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.issued, key)
}

func (s *failDeleteRestartsTokens) Claim(ctx context.Context, key store.Key, leaseMs int64) (store.Claim, error) {
	c, err := s.Store.Claim(ctx, key, leaseMs)
	if err == nil && c.Outcome == store.Acquired {
		s.mu.Lock()
		s.issued[key] = append(s.issued[key], c.Token)
		c.Token = uint64(len(s.issued[key]))
		s.mu.Unlock()
	}
	return c, err
}

func (s *failDeleteRestartsTokens) Begin(ctx context.Context, key store.Key, token uint64) (store.Tx, error) {
	return s.Store.Begin(ctx, key, s.inner(key, token))
}

func (s *failDeleteRestartsTokens) Fail(ctx context.Context, key store.Key, token uint64, reason string) error {
	err := s.Store.Fail(ctx, key, s.inner(key, token), reason)
	if err == nil {
		if _, ok, _ := s.Store.Get(ctx, key); !ok {
			s.forget(key)
		}
	}
	return err
}

func (s *failDeleteRestartsTokens) Cleanup(ctx context.Context, retentionMs int64) ([]store.Key, error) {
	keys, err := s.Store.Cleanup(ctx, retentionMs)
	for _, k := range keys {
		s.forget(k)
	}
	return keys, err
}

func (s *failDeleteRestartsTokens) Get(ctx context.Context, key store.Key) (store.Record, bool, error) {
	r, ok, err := s.Store.Get(ctx, key)
	if ok {
		r = s.outer(r)
	}
	return r, ok, err
}

func (s *failDeleteRestartsTokens) Records(ctx context.Context) ([]store.Record, error) {
	rs, err := s.Store.Records(ctx)
	for i := range rs {
		rs[i] = s.outer(rs[i])
	}
	return rs, err
}

// staleReleaseFreesClaim answers a stale release with silence, and frees
// the claim.
type staleReleaseFreesClaim struct{ *memstore.Store }

// NewStaleReleaseFreesClaim is a store whose release with a stale token is
// a silent no-op by convention (SilentRelease) — but it releases whatever
// claim the key has: a slow worker whose lease was taken over frees the new
// holder's claim, and a third worker takes the key while the second still
// works on it.
func NewStaleReleaseFreesClaim(c clock.Source) store.Store {
	return staleReleaseFreesClaim{conventional(c, SilentRelease)}
}

func (s staleReleaseFreesClaim) Fail(ctx context.Context, key store.Key, token uint64, reason string) error {
	if r, ok, err := s.Store.Get(ctx, key); err == nil && ok && r.State == store.Processing {
		token = r.Token // the bug: the current holder's token, not the caller's
	}
	return s.Store.Fail(ctx, key, token, reason)
}

// markOnClaimNeverExpires marks on claim and never lets the mark go.
type markOnClaimNeverExpires struct{ *memstore.Store }

// NewMarkOnClaimNeverExpires is a store that marks a key on claim, as its
// documentation says (MarkOnClaim), but never expires the mark: once the
// worker that claimed it dies, every later claim answers AlreadyProcessed
// and the event is never processed.
func NewMarkOnClaimNeverExpires(c clock.Source) store.Store {
	return markOnClaimNeverExpires{conventional(c, MarkOnClaim)}
}

func (s markOnClaimNeverExpires) Claim(ctx context.Context, key store.Key, leaseMs int64) (store.Claim, error) {
	if r, ok, err := s.Store.Get(ctx, key); err == nil && ok && r.State == store.Processing {
		now, err := s.Store.NowMs(ctx)
		return store.Claim{Outcome: store.AlreadyProcessed, AtMs: now}, err
	}
	return s.Store.Claim(ctx, key, leaseMs)
}
