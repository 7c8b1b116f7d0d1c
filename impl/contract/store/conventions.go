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
	// (or its claim, under ExpiryFromClaim) the library removes a
	// processed record (its result TTL, or its window). It must be
	// positive then, and zero otherwise.
	ExpiryMs int64 `json:"expiryMs,omitempty"`
	// ExpiryLatestMs is, under ExpiryByLibrary, the latest the library
	// removes a processed record, counted as ExpiryMs is, for a library
	// whose removal is a range rather than an instant (a sweep every so
	// often, a window kept in generations): the record is there until
	// ExpiryMs have passed, may go at any time from then on, and is gone
	// once ExpiryLatestMs have passed. Zero means ExpiryMs: removal at
	// exactly that instant. Otherwise it must be at least ExpiryMs, and
	// set only under ExpiryByLibrary.
	ExpiryLatestMs int64 `json:"expiryLatestMs,omitempty"`
	// ExpiryFrom says from which instant the library's expiry of a
	// processed record counts: its finishedAt, or the claim that started
	// the attempt which settled it.
	ExpiryFrom ExpiryFrom `json:"expiryFrom,omitempty"`
	// UnsettledExpiryMs, when positive, is how long after its claim (the
	// record's StartedAtMs) the library removes a record it holds
	// unsettled — in processing or failed — whatever its lease: the
	// record's own TTL. Zero: the library removes no unsettled record by
	// time (but ExpiredLeaseVanishes). It must not be negative.
	UnsettledExpiryMs int64 `json:"unsettledExpiryMs,omitempty"`
	// Lease says whether a claim's mark carries the lease the claim asked
	// for, or none (it then holds until its own expiry,
	// UnsettledExpiryMs).
	Lease Lease `json:"lease,omitempty"`
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

// ExpiryFrom is the instant from which a library's expiry of a processed
// record counts.
type ExpiryFrom string

const (
	// ExpiryFromFinished (also ""): from the record's finishedAt, the
	// commit that settled it.
	ExpiryFromFinished ExpiryFrom = "finished"
	// ExpiryFromClaim: from the record's StartedAtMs, the claim that
	// acquired the attempt which settled it — a TTL set when the key is
	// claimed (SET NX PX ttl, a column's default on insert) that the
	// commit keeps (KEEPTTL, an UPDATE that leaves the column). A record
	// claimed at S is gone from S+ExpiryMs on, however late its commit.
	// Only under ExpiryByLibrary.
	ExpiryFromClaim ExpiryFrom = "claimed"
)

// Lease is whether a claim's mark carries a lease.
type Lease string

const (
	// LeasePerClaim (also ""): a claim holds the key for the lease it asked
	// for (its record shows LeaseUntilMs), and once the lease ran out the
	// key is taken over (or its record vanishes, ExpiredLeaseVanishes).
	LeasePerClaim Lease = "per-claim"
	// LeaseNone: the library's mark has no lease. The claim's leaseMs is
	// ignored and its record in processing shows LeaseUntilMs 0; a claim
	// of the key answers busy (Locked, or AlreadyProcessed under
	// ClaimMarkOnClaim) until the holder settles or releases it, or the
	// library removes the mark UnsettledExpiryMs after the claim — which
	// must then be set: a mark nothing removes would keep a crashed
	// holder's key for ever. There is no takeover: the claim after the
	// removal acquires the key afresh (attempt 1) with a greater token,
	// and the old holder's commit finds no claim. LeaseEnd inclusive,
	// ExpiredLeaseVanishes and LateCommitRefused, which speak of a lease,
	// do not apply.
	LeaseNone Lease = "none"
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
	switch {
	case c.ExpiryLatestMs < 0:
		return fmt.Errorf("store: convention ExpiryLatestMs %d is negative", c.ExpiryLatestMs)
	case c.ExpiryLatestMs > 0 && c.Expiry != ExpiryByLibrary:
		return fmt.Errorf("store: convention ExpiryLatestMs %d is set but Expiry is %q; ExpiryLatestMs is the latest the library removes a record itself (Expiry %q)", c.ExpiryLatestMs, c.Expiry, ExpiryByLibrary)
	case c.ExpiryLatestMs > 0 && c.ExpiryLatestMs < c.ExpiryMs:
		return fmt.Errorf("store: convention ExpiryLatestMs %d is before ExpiryMs %d; a removal that may come late ends at or after the earliest", c.ExpiryLatestMs, c.ExpiryMs)
	}
	switch c.ExpiryFrom {
	case "", ExpiryFromFinished:
	case ExpiryFromClaim:
		if c.Expiry != ExpiryByLibrary {
			return fmt.Errorf("store: convention ExpiryFrom %q is set but Expiry is %q; it says from when the library's own expiry counts (Expiry %q)", c.ExpiryFrom, c.Expiry, ExpiryByLibrary)
		}
	default:
		return bad("ExpiryFrom", c.ExpiryFrom, ExpiryFromFinished, ExpiryFromClaim)
	}
	if c.UnsettledExpiryMs < 0 {
		return fmt.Errorf("store: convention UnsettledExpiryMs %d is negative", c.UnsettledExpiryMs)
	}
	switch c.Lease {
	case "", LeasePerClaim:
	case LeaseNone:
		if c.UnsettledExpiryMs == 0 {
			return fmt.Errorf("store: convention Lease %q needs UnsettledExpiryMs, how long after the claim the library removes its mark: a mark with no lease that nothing removes keeps a crashed holder's key for ever", c.Lease)
		}
		for _, f := range []struct {
			field string
			set   bool
			value any
		}{
			{"LeaseEnd", c.LeaseEnd == LeaseEndInclusive, c.LeaseEnd},
			{"ExpiredLease", c.ExpiredLease == ExpiredLeaseVanishes, c.ExpiredLease},
			{"LateCommit", c.LateCommit == LateCommitRefused, c.LateCommit},
		} {
			if f.set {
				return fmt.Errorf("store: convention Lease %q (a mark with no lease) and %s %q, which speaks of a lease, do not go together", c.Lease, f.field, f.value)
			}
		}
	default:
		return bad("Lease", c.Lease, LeasePerClaim, LeaseNone)
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

// ExpiryStartMs is the instant from which the library's expiry of a
// processed record started at startedAtMs and finished at finishedAtMs
// counts: finishedAtMs, or startedAtMs under ExpiryFromClaim.
func (c Conventions) ExpiryStartMs(startedAtMs, finishedAtMs int64) int64 {
	if c.ExpiryFrom == ExpiryFromClaim {
		return startedAtMs
	}
	return finishedAtMs
}

// ExpiryLatest is how long after its expiry start (ExpiryStartMs) a
// processed record is surely gone under ExpiryByLibrary: ExpiryLatestMs,
// or ExpiryMs when the removal is an instant.
func (c Conventions) ExpiryLatest() int64 {
	if c.ExpiryLatestMs > 0 {
		return c.ExpiryLatestMs
	}
	return c.ExpiryMs
}

// MayHaveExpired reports whether, under ExpiryByLibrary, the library may
// have removed by nowMs a processed record whose expiry counts from
// fromMs (ExpiryStartMs): ExpiryMs have passed.
func (c Conventions) MayHaveExpired(fromMs, nowMs int64) bool {
	return c.Expiry == ExpiryByLibrary && nowMs >= fromMs+c.ExpiryMs
}

// MustHaveExpired reports whether, under ExpiryByLibrary, the library has
// surely removed by nowMs a processed record whose expiry counts from
// fromMs: ExpiryLatest has passed.
func (c Conventions) MustHaveExpired(fromMs, nowMs int64) bool {
	return c.Expiry == ExpiryByLibrary && nowMs >= fromMs+c.ExpiryLatest()
}

// UnsettledGone reports whether the library has removed by nowMs a record
// not settled — in state (Processing or Failed) since the claim at
// startedAtMs, its lease ending at leaseUntilMs — by time alone: its own
// expiry passed (UnsettledExpiryMs), or, in processing, its lease ran out
// where expired leases vanish.
func (c Conventions) UnsettledGone(state State, startedAtMs, leaseUntilMs, nowMs int64) bool {
	if c.UnsettledExpiryMs > 0 && nowMs >= startedAtMs+c.UnsettledExpiryMs && (state == Processing || state == Failed) {
		return true
	}
	return state == Processing && c.ExpiredLease == ExpiredLeaseVanishes && !c.LeaseHolds(nowMs, leaseUntilMs)
}

// LeaseUntilMs is the lease end a claim at nowMs for leaseMs gives its
// record: nowMs+leaseMs, or 0 for a mark with no lease (LeaseNone).
func (c Conventions) LeaseUntilMs(nowMs, leaseMs int64) int64 {
	if c.Lease == LeaseNone {
		return 0
	}
	return nowMs + leaseMs
}

// Holds reports whether a record in processing since the claim at
// startedAtMs, its lease ending at leaseUntilMs, still holds its key
// against another claim at nowMs: its lease still holds (a mark with no
// lease, LeaseNone, holds as long as it is there), and its own expiry
// (UnsettledExpiryMs) has not passed.
func (c Conventions) Holds(startedAtMs, leaseUntilMs, nowMs int64) bool {
	if c.UnsettledExpiryMs > 0 && nowMs >= startedAtMs+c.UnsettledExpiryMs {
		return false
	}
	return c.Lease == LeaseNone || c.LeaseHolds(nowMs, leaseUntilMs)
}

// HoldMs is how long after a claim for leaseMs acquired a key its hold
// has surely ended: its lease has run out (LeaseRunOutMs), or, sooner,
// the record's own expiry (UnsettledExpiryMs) has passed — that expiry
// alone for a mark with no lease.
func (c Conventions) HoldMs(leaseMs int64) int64 {
	hold := c.LeaseRunOutMs(leaseMs)
	if c.Lease == LeaseNone {
		return c.UnsettledExpiryMs
	}
	if c.UnsettledExpiryMs > 0 {
		hold = min(hold, c.UnsettledExpiryMs)
	}
	return hold
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
