package racystore

import (
	"context"
	"runtime"

	"github.com/idemcheck/idemcheck/impl/contract/clock"
	"github.com/idemcheck/idemcheck/impl/contract/store"
)

// CheckThenActClaim is a mutant whose claim reads the record, decides, and
// writes the acquisition in a second step without holding the lock across
// the two: the SELECT-then-UPDATE without a row lock or a conditional
// update. Two workers that read the same free record both acquire it.
type CheckThenActClaim struct{ *table }

// NewCheckThenActClaim returns the check-then-act mutant over clock c.
func NewCheckThenActClaim(c clock.Source) *CheckThenActClaim {
	return &CheckThenActClaim{newTable(c)}
}

var _ store.Store = (*CheckThenActClaim)(nil)

// Claim checks under the lock, lets go of it, then acts on what it saw.
func (s *CheckThenActClaim) Claim(_ context.Context, key store.Key, leaseMs int64) (store.Claim, error) {
	s.mu.Lock()
	now := s.clock.NowMs()
	var seen store.Record
	r, exists := s.records[key]
	if exists {
		seen = *r
	}
	s.mu.Unlock()

	switch {
	case exists && seen.State == store.Processed:
		return store.Claim{Outcome: store.AlreadyProcessed, AtMs: now}, nil
	case exists && seen.State == store.Processing && now < seen.LeaseUntilMs:
		return store.Claim{Outcome: store.Locked, AtMs: now}, nil
	}

	// The window between the read and the write: in a real store, the round
	// trip between the SELECT and the UPDATE. Yielding here makes it as real
	// under the Go scheduler as it is over a network.
	runtime.Gosched()

	s.mu.Lock()
	defer s.mu.Unlock()
	token := s.nextToken(nil, false)
	// A blind write of what the stale read decided.
	s.records[key] = &store.Record{
		Key:          key,
		State:        store.Processing,
		StartedAtMs:  now,
		Attempts:     seen.Attempts + 1,
		Token:        token,
		LeaseUntilMs: now + leaseMs,
	}
	takeover := exists && seen.State == store.Processing
	return store.Claim{Outcome: store.Acquired, Token: token, Attempt: seen.Attempts + 1, Takeover: takeover, AtMs: now}, nil
}
