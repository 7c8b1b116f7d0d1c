package store

import (
	"context"
	"fmt"
)

// Conventions are the points on which correct stores legitimately differ.
// An implementation declares its own in one value, which the contract suite
// (storetest), the invariants (properties.Conformance) and the
// linearizability check all take, so that a store is held to what it
// promises and to nothing else. The zero value is the reference store's
// conventions.
type Conventions struct {
	// LeaseEnd says whether a lease still holds at exactly its expiry
	// instant.
	LeaseEnd LeaseEnd `json:"leaseEnd,omitempty"`
	// FailedAttempt says what Fail leaves behind.
	FailedAttempt FailedAttempt `json:"failedAttempt,omitempty"`
	// StaleRelease says what Fail answers with a token that is not the
	// record's current one.
	StaleRelease StaleRelease `json:"staleRelease,omitempty"`
	// ClaimMark says what a claim answers while another holder's lease
	// runs.
	ClaimMark ClaimMark `json:"claimMark,omitempty"`
}

// LeaseEnd is whether a lease holds at its expiry instant.
type LeaseEnd string

const (
	// LeaseEndExclusive (also ""): a lease taken at t for L ms holds over
	// [t, t+L); a claim at t+L takes it over.
	LeaseEndExclusive LeaseEnd = "exclusive"
	// LeaseEndInclusive: the lease holds over [t, t+L]; a claim at t+L is
	// Locked, one at t+L+1 takes it over.
	LeaseEndInclusive LeaseEnd = "inclusive"
)

// FailedAttempt is what Fail leaves behind.
type FailedAttempt string

const (
	// FailedAttemptRecord (also ""): the record stays, state failed, with the
	// reason as LastError; the next claim is the next attempt.
	FailedAttemptRecord FailedAttempt = "failed-record"
	// FailedAttemptDeleted: the record is deleted, so the next claim starts
	// again at attempt 1 — but with a token greater than every one issued
	// before, or a late worker's commit would land.
	FailedAttemptDeleted FailedAttempt = "deleted"
)

// StaleRelease is what Fail answers with a stale token.
type StaleRelease string

const (
	// StaleReleaseError (also ""): ErrStaleToken while another holder has the
	// claim, ErrNotHeld when nobody does.
	StaleReleaseError StaleRelease = "error"
	// StaleReleaseNoOp: Fail returns nil. It must still change nothing.
	StaleReleaseNoOp StaleRelease = "no-op"
)

// ClaimMark is what a claim answers while another holder's lease runs.
type ClaimMark string

const (
	// ClaimMarkLocked (also ""): Locked.
	ClaimMarkLocked ClaimMark = "locked"
	// ClaimMarkOnClaim: the claim marks the key before the handler runs, as
	// some libraries document, so a claim during another's lease answers
	// AlreadyProcessed. The mark must still expire with the lease: once it
	// ran out, the key is taken over as usual. A consumer tells "done" from
	// "in progress" by reading the record (see Canonical).
	ClaimMarkOnClaim ClaimMark = "mark-on-claim"
)

// Validate reports an unknown convention, naming the field and the values
// it takes.
func (c Conventions) Validate() error {
	bad := func(field string, got any, want ...any) error {
		return fmt.Errorf("store: unknown convention %s %q; want one of %q", field, got, want)
	}
	switch c.LeaseEnd {
	case "", LeaseEndExclusive, LeaseEndInclusive:
	default:
		return bad("LeaseEnd", c.LeaseEnd, LeaseEndExclusive, LeaseEndInclusive)
	}
	switch c.FailedAttempt {
	case "", FailedAttemptRecord, FailedAttemptDeleted:
	default:
		return bad("FailedAttempt", c.FailedAttempt, FailedAttemptRecord, FailedAttemptDeleted)
	}
	switch c.StaleRelease {
	case "", StaleReleaseError, StaleReleaseNoOp:
	default:
		return bad("StaleRelease", c.StaleRelease, StaleReleaseError, StaleReleaseNoOp)
	}
	switch c.ClaimMark {
	case "", ClaimMarkLocked, ClaimMarkOnClaim:
	default:
		return bad("ClaimMark", c.ClaimMark, ClaimMarkLocked, ClaimMarkOnClaim)
	}
	return nil
}

// LeaseHolds reports whether a lease ending at leaseUntilMs still holds at
// nowMs.
func (c Conventions) LeaseHolds(nowMs, leaseUntilMs int64) bool {
	if c.LeaseEnd == LeaseEndInclusive {
		return nowMs <= leaseUntilMs
	}
	return nowMs < leaseUntilMs
}

// LeaseRunOutMs is how long after a claim its lease of leaseMs has surely
// run out: leaseMs, or one more under an inclusive end.
func (c Conventions) LeaseRunOutMs(leaseMs int64) int64 {
	if c.LeaseEnd == LeaseEndInclusive {
		return leaseMs + 1
	}
	return leaseMs
}

// BusyOutcome is what a claim answers while another holder's lease runs.
func (c Conventions) BusyOutcome() Outcome {
	if c.ClaimMark == ClaimMarkOnClaim {
		return AlreadyProcessed
	}
	return Locked
}

// Canonical returns s as a consumer that knows its conventions sees it: a
// mark-on-claim store's AlreadyProcessed for a record still in processing
// is reported as Locked (the key is in progress, not done), which is what a
// consumer of such a library must find out by reading the record before it
// acks a duplicate. Under the other conventions s is returned as it is.
func (c Conventions) Canonical(s Store) Store {
	if c.ClaimMark != ClaimMarkOnClaim {
		return s
	}
	return canonicalClaims{s}
}

type canonicalClaims struct{ Store }

func (s canonicalClaims) Claim(ctx context.Context, key Key, leaseMs int64) (Claim, error) {
	c, err := s.Store.Claim(ctx, key, leaseMs)
	if err != nil || c.Outcome != AlreadyProcessed {
		return c, err
	}
	r, ok, err := s.Store.Get(ctx, key)
	if err != nil {
		return c, err
	}
	if ok && r.State == Processing {
		c.Outcome = Locked
	}
	return c, nil
}

// Close closes the store underneath, if it has resources.
func (s canonicalClaims) Close() error {
	if cl, ok := s.Store.(Closer); ok {
		return cl.Close()
	}
	return nil
}
