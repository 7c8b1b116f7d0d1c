package racystore

import (
	"context"

	"github.com/idemcheck/idemcheck/impl/contract/clock"
	"github.com/idemcheck/idemcheck/impl/contract/store"
)

// TakeoverKeepsToken is a mutant that treats a takeover as a renewal of the
// expired lease: the new holder is given the old holder's fencing token. The
// slow old holder's commit then passes the fencing check, so two workers'
// commits can both land (fencing tokens reused).
type TakeoverKeepsToken struct{ *table }

// NewTakeoverKeepsToken returns the token-reusing mutant over clock c.
func NewTakeoverKeepsToken(c clock.Source) *TakeoverKeepsToken {
	return &TakeoverKeepsToken{newTable(c)}
}

var _ store.Store = (*TakeoverKeepsToken)(nil)

// Claim is the reference claim except that a takeover keeps the token.
func (s *TakeoverKeepsToken) Claim(_ context.Context, key store.Key, leaseMs int64) (store.Claim, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.claimLocked(key, leaseMs, s.clock.NowMs(), func(r *store.Record, takeover bool) uint64 {
		if takeover {
			return r.Token
		}
		return s.nextToken(r, takeover)
	}), nil
}

// FailResetsToken is a mutant whose fencing token is a per-record version
// (the row's token column plus one) and whose Fail "releases the lock" by
// zeroing that column. The next claim after a failure is issued token 1
// again, lower than tokens already handed out: a holder that lost its lease
// long ago with token 1 can commit over the new holder (fencing tokens
// decreasing and reused).
type FailResetsToken struct{ *table }

// NewFailResetsToken returns the token-resetting mutant over clock c.
func NewFailResetsToken(c clock.Source) *FailResetsToken {
	return &FailResetsToken{newTable(c)}
}

var _ store.Store = (*FailResetsToken)(nil)

// Claim is the reference claim with the token taken from the record.
func (s *FailResetsToken) Claim(_ context.Context, key store.Key, leaseMs int64) (store.Claim, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.claimLocked(key, leaseMs, s.clock.NowMs(), func(r *store.Record, _ bool) uint64 {
		return r.Token + 1
	}), nil
}

// Fail is the reference fail that also clears the record's token.
func (s *FailResetsToken) Fail(_ context.Context, key store.Key, token uint64, reason string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.failLocked(key, token, reason); err != nil {
		return err
	}
	s.records[key].Token = 0
	return nil
}
