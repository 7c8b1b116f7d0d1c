package linearizability

import (
	"strings"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/impl/contract/clock"
	"github.com/idemcheck/idemcheck/impl/contract/store"
	"github.com/idemcheck/idemcheck/impl/reference/memstore"
)

// everyConvention lists each convention on its own and all at once.
var everyConvention = []store.Conventions{
	{LeaseEnd: store.LeaseEndInclusive},
	{FailedAttempt: store.FailedAttemptDeleted},
	{StaleRelease: store.StaleReleaseNoOp},
	{ClaimMark: store.ClaimMarkOnClaim},
	{LeaseEnd: store.LeaseEndInclusive, FailedAttempt: store.FailedAttemptDeleted, StaleRelease: store.StaleReleaseNoOp, ClaimMark: store.ClaimMarkOnClaim},
	{FailedAttempt: store.FailedAttemptKeptMark},
	// An expiry shorter than a recording's run, so that records expire in it.
	{Expiry: store.ExpiryByLibrary, ExpiryMs: 30},
	{ExpiredLease: store.ExpiredLeaseVanishes},
	{LateCommit: store.LateCommitRefused},
	{Refusal: store.RefusalOneError},
	{LeaseEnd: store.LeaseEndInclusive, FailedAttempt: store.FailedAttemptKeptMark, ClaimMark: store.ClaimMarkOnClaim,
		Expiry: store.ExpiryByLibrary, ExpiryMs: 30, ExpiredLease: store.ExpiredLeaseVanishes, LateCommit: store.LateCommitRefused, Refusal: store.RefusalOneError},
	// A removal that is a range, an expiry from the claim, an unsettled
	// record's own expiry (shorter than some leases, longer than others),
	// a mark with no lease; then together.
	{Expiry: store.ExpiryByLibrary, ExpiryMs: 30, ExpiryLatestMs: 45},
	{Expiry: store.ExpiryByLibrary, ExpiryMs: 30, ExpiryFrom: store.ExpiryFromClaim},
	{UnsettledExpiryMs: 20},
	{Lease: store.LeaseNone, UnsettledExpiryMs: 20},
	{Lease: store.LeaseNone, UnsettledExpiryMs: 25, FailedAttempt: store.FailedAttemptKeptMark, ClaimMark: store.ClaimMarkOnClaim,
		Expiry: store.ExpiryByLibrary, ExpiryMs: 30, ExpiryLatestMs: 45, ExpiryFrom: store.ExpiryFromClaim, Refusal: store.RefusalOneError},
}

// The reference store keeping each convention is linearizable under the
// model of that convention, and flagged under the reference model: the
// declaration is what makes the difference, not a lenient model.
func TestConventionsFollowTheDeclaration(t *testing.T) {
	for _, conv := range everyConvention {
		t.Run(conventionName(conv), func(t *testing.T) {
			newStore := func(c clock.Source) store.Store {
				s, err := memstore.NewWithConventions(c, conv)
				if err != nil {
					t.Fatal(err)
				}
				return s
			}
			cfg := testConfig(2)
			cfg.Conventions = conv
			h := record(t, newStore, cfg)
			if r := Check(h, time.Minute); r.Verdict != Linearizable {
				t.Fatalf("declared %+v: %s\n%s", conv, r, strings.Join(r.Explanations, "\n"))
			}
			h.Conventions = store.Conventions{}
			if r := Check(h, time.Minute); r.Verdict != Violation {
				t.Fatalf("the same history under the reference conventions: %s, want a violation", r)
			}
		})
	}
}

func TestUnknownConventionIsAnError(t *testing.T) {
	cfg := testConfig(1)
	cfg.Conventions = store.Conventions{LeaseEnd: "half-open"}
	_, err := Record(t.Context(), newReference, cfg)
	if err == nil || !strings.Contains(err.Error(), "LeaseEnd") || !strings.Contains(err.Error(), "half-open") {
		t.Fatalf("error %v, want one naming LeaseEnd and the bad value", err)
	}
}

func conventionName(c store.Conventions) string {
	var parts []string
	for _, p := range []string{string(c.LeaseEnd), string(c.FailedAttempt), string(c.StaleRelease), string(c.ClaimMark), string(c.Expiry), string(c.ExpiryFrom),
		string(c.ExpiredLease), string(c.LateCommit), string(c.Refusal), string(c.Lease)} {
		if p != "" {
			parts = append(parts, p)
		}
	}
	if c.ExpiryLatestMs > 0 {
		parts = append(parts, "range")
	}
	if c.UnsettledExpiryMs > 0 {
		parts = append(parts, "unsettled-ttl")
	}
	return strings.Join(parts, "+")
}
