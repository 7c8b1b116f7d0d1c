package system

import (
	"github.com/idemcheck/idemcheck/impl/contract/clock"
	"github.com/idemcheck/idemcheck/impl/contract/store"
	"github.com/idemcheck/idemcheck/impl/mutant"
	"github.com/idemcheck/idemcheck/internal/law"
)

// conventionMutant registers a store mutant that declares conventions other
// than the reference's: each convention has one, so that the checks are
// shown to bite under it.
func conventionMutant(name, bug, killedBy string, conv store.Conventions, newStore func(clock.Source) store.Store) {
	consumptionMutant(name, bug, killedBy, func(c *Consumption) {
		c.NewStore = storeOf(newStore)
		c.Conventions = conv
	})
}

func init() {
	conventionMutant("lease-expires-before-declared-end",
		"the store declares that a lease holds at its expiry instant, but a claim at exactly that instant takes it over",
		law.Linearizability, mutant.InclusiveLease, mutant.NewLeaseExpiresBeforeDeclaredEnd)
	conventionMutant("fail-delete-restarts-tokens",
		"a failed attempt's record is deleted (its convention) and fencing tokens are numbered per record, so they restart after the delete or a cleanup",
		law.Linearizability, mutant.DeleteOnFail, mutant.NewFailDeleteRestartsTokens)
	conventionMutant("stale-release-frees-claim",
		"a release with a stale token is a silent no-op by convention, but it frees the current holder's claim",
		law.Linearizability, mutant.SilentRelease, mutant.NewStaleReleaseFreesClaim)
	conventionMutant("mark-on-claim-never-expires",
		"the claim marks the key before the handler (its documented design), but the mark never expires: after a crash the event is never processed",
		law.NothingLost, mutant.MarkOnClaim, mutant.NewMarkOnClaimNeverExpires)
	conventionMutant("kept-mark-never-expires",
		"a failed attempt keeps its mark until the lease runs out (its convention), but the mark never runs out: the failed event is never retried",
		law.NothingLost, mutant.KeptMark, mutant.NewKeptMarkNeverExpires)
	conventionMutant("library-expiry-too-early",
		"the library expires results itself, declared after two minutes, but reads the setting as seconds and expires them after 120 ms: a later redelivery is processed again",
		law.SingleCredit, mutant.LibraryExpiry, mutant.NewLibraryExpiryTooEarly)
	conventionMutant("vanished-lease-restarts-tokens",
		"an expired lease vanishes (its convention) and fencing tokens are numbered per record, so they restart once the record is gone",
		law.Linearizability, mutant.VanishingLease, mutant.NewVanishedLeaseRestartsTokens)
	conventionMutant("late-commit-lands",
		"the store declares a commit after its lease ran out refused, but lands it when nobody took the key over",
		law.Linearizability, mutant.LateRefused, mutant.NewLateCommitLands)
	conventionMutant("one-error-commits-settled-twice",
		"one error answers every refusal (its convention), and the commit compares the token alone: a second commit with a settled claim's token lands again",
		law.Linearizability, mutant.OneError, mutant.NewOneErrorCommitsSettledTwice)
	conventionMutant("sweep-every-window",
		"the library forgets results between one window and one and a half after they finished (its convention, a sweep every half window), but sweeps every whole window: a result outlives its declared latest removal",
		law.Linearizability, mutant.ExpiryRange, mutant.NewSweepEveryWindow)
	conventionMutant("expiry-counted-from-commit",
		"a result expires a fixed time after the claim of its attempt (its convention, a TTL set when the key is created), but the commit sets the TTL afresh: the result outlives its declared expiry",
		law.Linearizability, mutant.ExpiryFromClaim, mutant.NewExpiryCountedFromCommit)
	conventionMutant("unsettled-ttl-as-seconds",
		"a record held unsettled is removed 30 ms after its claim (its convention), but its TTL is set in seconds: it lingers 30 s, held or failed, where the key was declared free again",
		law.Linearizability, mutant.UnsettledExpiry, mutant.NewUnsettledTTLAsSeconds)
	conventionMutant("lease-free-mark-never-expires",
		"the claim marks the key with no lease (its convention) to be removed two minutes later, but the mark is never removed: after a crash the event is never processed",
		law.NothingLost, mutant.NoLease, mutant.NewLeaseFreeMarkNeverExpires)
}
