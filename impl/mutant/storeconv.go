package mutant

import (
	"context"
	"math"
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
	KeptMark       = store.Conventions{FailedAttempt: store.FailedAttemptKeptMark}
	// LibraryExpiry expires results two minutes after they finished: longer
	// than any redelivery window the generator draws.
	LibraryExpiry  = store.Conventions{Expiry: store.ExpiryByLibrary, ExpiryMs: 120_000}
	VanishingLease = store.Conventions{ExpiredLease: store.ExpiredLeaseVanishes}
	LateRefused    = store.Conventions{LateCommit: store.LateCommitRefused}
	OneError       = store.Conventions{Refusal: store.RefusalOneError}
	// ExpiryRange forgets results between 30 and 45 ms after they
	// finished (a window swept every half window), ExpiryFromClaim 30 ms
	// after the claim that settled them, UnsettledExpiry removes a record
	// held unsettled 30 ms after its claim: short enough for a
	// linearizability recording, whose keys live some tens of
	// milliseconds, to see the removals.
	ExpiryRange     = store.Conventions{Expiry: store.ExpiryByLibrary, ExpiryMs: 30, ExpiryLatestMs: 45}
	ExpiryFromClaim = store.Conventions{Expiry: store.ExpiryByLibrary, ExpiryMs: 30, ExpiryFrom: store.ExpiryFromClaim}
	UnsettledExpiry = store.Conventions{UnsettledExpiryMs: 30}
	// NoLease marks a key with no lease, for two minutes at most.
	NoLease = store.Conventions{Lease: store.LeaseNone, UnsettledExpiryMs: 120_000}
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
	if _, ok, err := s.Store.Get(ctx, key); err == nil && !ok {
		s.forget(key) // the record is gone, whatever removed it: its count restarts
	}
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

// keptMarkNeverExpires keeps a failed attempt's mark for ever.
type keptMarkNeverExpires struct {
	*memstore.Store
	mu   sync.Mutex
	kept map[store.Key]uint64 // the token whose failed mark never expires
}

// NewKeptMarkNeverExpires is a store that keeps a failed attempt's mark,
// as its documentation says (KeptMark), but lets it hold for ever: a failed
// key is never claimed again and the event is never processed.
func NewKeptMarkNeverExpires(c clock.Source) store.Store {
	return &keptMarkNeverExpires{Store: conventional(c, KeptMark), kept: map[store.Key]uint64{}}
}

func (s *keptMarkNeverExpires) Claim(ctx context.Context, key store.Key, leaseMs int64) (store.Claim, error) {
	s.mu.Lock()
	token, kept := s.kept[key]
	s.mu.Unlock()
	if r, ok, err := s.Store.Get(ctx, key); err == nil && kept && ok && r.State == store.Processing && r.Token == token {
		now, err := s.Store.NowMs(ctx)
		return store.Claim{Outcome: store.Locked, AtMs: now}, err
	}
	return s.Store.Claim(ctx, key, leaseMs)
}

func (s *keptMarkNeverExpires) Fail(ctx context.Context, key store.Key, token uint64, reason string) error {
	r, ok, _ := s.Store.Get(ctx, key)
	if err := s.Store.Fail(ctx, key, token, reason); err != nil {
		return err
	}
	if ok && r.State == store.Processing && r.Token == token {
		s.mu.Lock()
		s.kept[key] = token
		s.mu.Unlock()
	}
	return nil
}

// NewLibraryExpiryTooEarly is a store that declares results expire two
// minutes after they finished (LibraryExpiry) but reads the setting as
// seconds where it means milliseconds and expires them after 120 ms: a
// redelivery after that is processed a second time.
func NewLibraryExpiryTooEarly(c clock.Source) store.Store {
	return conventional(c, store.Conventions{Expiry: store.ExpiryByLibrary, ExpiryMs: LibraryExpiry.ExpiryMs / 1000})
}

// NewVanishedLeaseRestartsTokens is a store whose expired leases vanish
// (VanishingLease) and whose fencing tokens are numbered per record, so
// they restart once an expired record is gone: the worker whose lease
// vanished holds a token equal to the next holder's, and its commit lands.
func NewVanishedLeaseRestartsTokens(c clock.Source) store.Store {
	return &failDeleteRestartsTokens{Store: conventional(c, VanishingLease), issued: map[store.Key][]uint64{}}
}

// NewLateCommitLands is a store that declares a commit after its lease ran
// out refused (LateRefused) but lands it when nobody took the key over: a
// worker that trusts the refusal to stop a slow commit finds it applied.
func NewLateCommitLands(c clock.Source) store.Store {
	return conventional(c, store.Conventions{})
}

// oneErrorCommitsSettledTwice answers every refusal with one error and
// checks only the token.
type oneErrorCommitsSettledTwice struct{ *memstore.Store }

// NewOneErrorCommitsSettledTwice is a store with one error for every
// refusal (OneError) whose commit compares the token alone: a processed
// record keeps its token, so a second commit with the token of a settled
// claim lands again — its entries credited and the record marked anew.
func NewOneErrorCommitsSettledTwice(c clock.Source) store.Store {
	return oneErrorCommitsSettledTwice{conventional(c, OneError)}
}

func (s oneErrorCommitsSettledTwice) Begin(ctx context.Context, key store.Key, token uint64) (store.Tx, error) {
	tx, err := s.Store.Begin(ctx, key, token)
	if err != nil {
		return nil, err
	}
	return &tokenOnlyTx{Tx: tx, s: s.Store, key: key, token: token}, nil
}

type tokenOnlyTx struct {
	store.Tx
	s      *memstore.Store
	key    store.Key
	token  uint64
	staged []store.Entry
}

func (t *tokenOnlyTx) Credit(e store.Entry) {
	t.staged = append(t.staged, e)
	t.Tx.Credit(e)
}

func (t *tokenOnlyTx) Commit(ctx context.Context) (store.CommitResult, error) {
	r, ok, err := t.s.Get(ctx, t.key)
	if err != nil || !ok || r.State != store.Processed || r.Token != t.token {
		return t.Tx.Commit(ctx)
	}
	// The bug: the token matches, so the settled claim commits again.
	_ = t.Tx.Rollback(ctx)
	now, _ := t.s.NowMs(ctx)
	res := store.CommitResult{AtMs: now}
	for _, e := range t.staged {
		if in, _ := t.s.InsertEntry(ctx, e); in {
			res.Credited++
		} else {
			res.DuplicatesIgnored++
		}
	}
	return res, t.s.MarkProcessed(ctx, t.key)
}

// NewSweepEveryWindow is a store that declares it forgets a result
// between one window (30 ms) and one and a half after it finished
// (ExpiryRange), a sweep every half window, but sweeps every whole
// window: a result may outlive its declared latest removal by half a
// window, and a claim then is answered already processed where the key
// was declared free again.
func NewSweepEveryWindow(c clock.Source) store.Store {
	wide := ExpiryRange
	wide.ExpiryLatestMs = 2 * ExpiryRange.ExpiryMs
	return conventional(c, wide)
}

// NewExpiryCountedFromCommit is a store that declares a result expires
// 30 ms after the claim of the attempt that settled it (ExpiryFromClaim),
// a key's TTL set when it is created, as an idempotency key "expires a
// day after its first use" — but its commit sets the TTL afresh, so the
// result outlives its declared expiry by as long as the attempt took, and
// a request after the declared expiry is answered with the old result.
func NewExpiryCountedFromCommit(c clock.Source) store.Store {
	fromCommit := ExpiryFromClaim
	fromCommit.ExpiryFrom = store.ExpiryFromFinished
	return conventional(c, fromCommit)
}

// NewUnsettledTTLAsSeconds is a store that declares a record held
// unsettled is removed 30 ms after its claim (UnsettledExpiry), but sets
// that TTL in seconds where it means milliseconds (EX for PX): the record
// lingers 30 s, held or failed, where the key was declared free again.
func NewUnsettledTTLAsSeconds(c clock.Source) store.Store {
	return conventional(c, store.Conventions{UnsettledExpiryMs: UnsettledExpiry.UnsettledExpiryMs * 1000})
}

// NewLeaseFreeMarkNeverExpires is a store whose claim marks a key with no
// lease, as it declares (NoLease), and declares the mark removed two
// minutes after the claim — but never removes it: once the worker that
// claimed a key dies, every later claim answers locked and the event is
// never processed.
func NewLeaseFreeMarkNeverExpires(c clock.Source) store.Store {
	forever := NoLease
	forever.UnsettledExpiryMs = math.MaxInt64 / 2
	return conventional(c, forever)
}
