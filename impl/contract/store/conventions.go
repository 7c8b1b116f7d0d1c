package store

import (
	"context"
	"errors"
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
	// Expiry says who removes processed records: Cleanup, or the library
	// itself after ExpiryMs.
	Expiry Expiry `json:"expiry,omitempty"`
	// ExpiryMs is, under ExpiryByLibrary, how long after its finishedAt
	// the library removes a processed record (its result TTL, or its
	// window). It must be positive then, and zero otherwise.
	ExpiryMs int64 `json:"expiryMs,omitempty"`
	// ExpiredLease says what becomes of a record in processing once its
	// lease ran out.
	ExpiredLease ExpiredLease `json:"expiredLease,omitempty"`
	// LateCommit says whether a holder whose lease ran out may still
	// commit while nobody has taken the key over.
	LateCommit LateCommit `json:"lateCommit,omitempty"`
	// Refusal says which error refuses a commit or a release by a caller
	// that does not hold the claim.
	Refusal Refusal `json:"refusal,omitempty"`
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
	// FailedAttemptKeptMark: Fail changes nothing — the record stays in
	// processing under its token and lease, as a library does whose mark
	// stays until it expires — so the key is claimed again only once the
	// lease ran out (a takeover, the next attempt, a greater token). Until
	// then the failed holder's token still holds the claim.
	FailedAttemptKeptMark FailedAttempt = "kept-mark"
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

// Expiry is who removes processed records.
type Expiry string

const (
	// ExpiryCleanup (also ""): processed records stay until Cleanup removes
	// them, by the store's clock and the retention it is given.
	ExpiryCleanup Expiry = "cleanup"
	// ExpiryByLibrary: the library removes a processed record itself once
	// ExpiryMs have passed since its finishedAt (a record finished at F is
	// gone from F+ExpiryMs on) — a result TTL, or a windowed repository —
	// and has no retention call: Cleanup removes nothing. Fencing tokens
	// must still grow past the removal.
	ExpiryByLibrary Expiry = "library"
)

// ExpiredLease is what becomes of a record whose lease ran out.
type ExpiredLease string

const (
	// ExpiredLeaseTakenOver (also ""): the record stays in processing; the
	// next claim takes it over (Takeover set, the next attempt).
	ExpiredLeaseTakenOver ExpiredLease = "taken-over"
	// ExpiredLeaseVanishes: the record is gone once its lease ran out, as
	// an expiring key is: Get and Records no longer show it, the next
	// claim acquires it afresh (attempt 1, no takeover) with a token
	// greater than every earlier one, and the old holder's commit finds no
	// claim.
	ExpiredLeaseVanishes ExpiredLease = "vanishes"
)

// LateCommit is whether a holder may commit once its lease ran out.
type LateCommit string

const (
	// LateCommitAllowed (also ""): a commit lands as long as nobody took
	// the key over, even after the lease ran out.
	LateCommitAllowed LateCommit = "allowed"
	// LateCommitRefused: a commit at or after the lease's end is refused
	// (ErrStaleToken) and changes nothing, taken over or not; the record
	// stays in processing for the next claim to take over.
	LateCommitRefused LateCommit = "refused"
)

// Refusal is which error refuses a caller that does not hold the claim.
type Refusal string

const (
	// RefusalDistinct (also ""): ErrStaleToken while another holder has
	// the claim, ErrNotHeld when nobody does.
	RefusalDistinct Refusal = "distinct"
	// RefusalOneError: the library has one error for both, and the store
	// wraps either ErrStaleToken or ErrNotHeld whichever the case; the
	// refusal must still change nothing.
	RefusalOneError Refusal = "one-error"
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
	case "", FailedAttemptRecord, FailedAttemptDeleted, FailedAttemptKeptMark:
	default:
		return bad("FailedAttempt", c.FailedAttempt, FailedAttemptRecord, FailedAttemptDeleted, FailedAttemptKeptMark)
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
	switch c.Expiry {
	case "", ExpiryCleanup:
		if c.ExpiryMs != 0 {
			return fmt.Errorf("store: convention ExpiryMs %d is set but Expiry is %q; ExpiryMs is the library's own expiry (Expiry %q)", c.ExpiryMs, c.Expiry, ExpiryByLibrary)
		}
	case ExpiryByLibrary:
		if c.ExpiryMs <= 0 {
			return fmt.Errorf("store: convention Expiry %q needs ExpiryMs, how long after finishedAt the library removes a processed record; got %d", c.Expiry, c.ExpiryMs)
		}
	default:
		return bad("Expiry", c.Expiry, ExpiryCleanup, ExpiryByLibrary)
	}
	switch c.ExpiredLease {
	case "", ExpiredLeaseTakenOver, ExpiredLeaseVanishes:
	default:
		return bad("ExpiredLease", c.ExpiredLease, ExpiredLeaseTakenOver, ExpiredLeaseVanishes)
	}
	switch c.LateCommit {
	case "", LateCommitAllowed, LateCommitRefused:
	default:
		return bad("LateCommit", c.LateCommit, LateCommitAllowed, LateCommitRefused)
	}
	switch c.Refusal {
	case "", RefusalDistinct, RefusalOneError:
	default:
		return bad("Refusal", c.Refusal, RefusalDistinct, RefusalOneError)
	}
	return nil
}

// Expired reports whether a processed record finished at finishedAtMs is
// gone by nowMs under the library's own expiry.
func (c Conventions) Expired(finishedAtMs, nowMs int64) bool {
	return c.Expiry == ExpiryByLibrary && nowMs >= finishedAtMs+c.ExpiryMs
}

// Refuses reports whether err is a refusal the conventions allow where
// want (ErrStaleToken or ErrNotHeld) is due: want itself, or under
// RefusalOneError either of them.
func (c Conventions) Refuses(err, want error) bool {
	if errors.Is(err, want) {
		return true
	}
	return c.Refusal == RefusalOneError && (errors.Is(err, ErrStaleToken) || errors.Is(err, ErrNotHeld))
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
		c.Outcome, c.Answered = Locked, AlreadyProcessed
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
