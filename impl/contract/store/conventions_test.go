package store

import (
	"strings"
	"testing"
)

func TestUnknownConventionsAreNamed(t *testing.T) {
	for _, c := range []struct {
		conv  Conventions
		field string
	}{
		{Conventions{LeaseEnd: "closed"}, "LeaseEnd"},
		{Conventions{FailedAttempt: "kept"}, "FailedAttempt"},
		{Conventions{StaleRelease: "panic"}, "StaleRelease"},
		{Conventions{ClaimMark: "marked"}, "ClaimMark"},
		{Conventions{Expiry: "ttl"}, "Expiry"},
		{Conventions{Expiry: ExpiryByLibrary}, "ExpiryMs"},
		{Conventions{ExpiryMs: 1000}, "ExpiryMs"},
		{Conventions{ExpiredLease: "gone"}, "ExpiredLease"},
		{Conventions{LateCommit: "never"}, "LateCommit"},
		{Conventions{Refusal: "same"}, "Refusal"},
		{Conventions{ExpiryLatestMs: 1000}, "ExpiryLatestMs"},
		{Conventions{Expiry: ExpiryByLibrary, ExpiryMs: 1000, ExpiryLatestMs: 999}, "ExpiryLatestMs"},
		{Conventions{Expiry: ExpiryByLibrary, ExpiryMs: 1000, ExpiryLatestMs: -1}, "ExpiryLatestMs"},
		{Conventions{Expiry: ExpiryByLibrary, ExpiryMs: 1000, ExpiryFrom: "commit"}, "ExpiryFrom"},
		{Conventions{ExpiryFrom: ExpiryFromClaim}, "ExpiryFrom"},
		{Conventions{UnsettledExpiryMs: -5}, "UnsettledExpiryMs"},
		{Conventions{Lease: "never"}, "Lease"},
		{Conventions{Lease: LeaseNone}, "UnsettledExpiryMs"},
		{Conventions{Lease: LeaseNone, UnsettledExpiryMs: 1000, LeaseEnd: LeaseEndInclusive}, "LeaseEnd"},
		{Conventions{Lease: LeaseNone, UnsettledExpiryMs: 1000, ExpiredLease: ExpiredLeaseVanishes}, "ExpiredLease"},
		{Conventions{Lease: LeaseNone, UnsettledExpiryMs: 1000, LateCommit: LateCommitRefused}, "LateCommit"},
	} {
		err := c.conv.Validate()
		if err == nil || !strings.Contains(err.Error(), c.field) {
			t.Errorf("%+v: error %v, want one naming %s", c.conv, err, c.field)
		}
	}
	for _, c := range []Conventions{
		{},
		{Expiry: ExpiryByLibrary, ExpiryMs: 1000, ExpiryLatestMs: 1500, ExpiryFrom: ExpiryFromClaim},
		{Expiry: ExpiryByLibrary, ExpiryMs: 1000, ExpiryLatestMs: 1000, ExpiryFrom: ExpiryFromFinished},
		{UnsettledExpiryMs: 1000},
		{Lease: LeaseNone, UnsettledExpiryMs: 1000, FailedAttempt: FailedAttemptKeptMark, ClaimMark: ClaimMarkOnClaim},
	} {
		if err := c.Validate(); err != nil {
			t.Errorf("%+v: %v", c, err)
		}
	}
}

// A removal that is a range may come at any time between its earliest and
// its latest, counted from the commit or from the claim as declared.
func TestExpiryRangeAndStart(t *testing.T) {
	c := Conventions{Expiry: ExpiryByLibrary, ExpiryMs: 100, ExpiryLatestMs: 150}
	if c.ExpiryStartMs(10, 40) != 40 {
		t.Fatal("by default the expiry counts from finishedAt")
	}
	if c.MayHaveExpired(40, 139) || !c.MayHaveExpired(40, 140) {
		t.Fatal("a record may go once ExpiryMs have passed, not before")
	}
	if c.MustHaveExpired(40, 189) || !c.MustHaveExpired(40, 190) {
		t.Fatal("a record is surely gone once ExpiryLatestMs have passed, not before")
	}
	c.ExpiryFrom = ExpiryFromClaim
	if c.ExpiryStartMs(10, 40) != 10 {
		t.Fatal("ExpiryFromClaim counts from startedAt")
	}
	exact := Conventions{Expiry: ExpiryByLibrary, ExpiryMs: 100}
	if exact.ExpiryLatest() != 100 || !exact.MustHaveExpired(0, 100) {
		t.Fatal("without ExpiryLatestMs the removal is an instant")
	}
	if (Conventions{}).MayHaveExpired(0, 1<<40) {
		t.Fatal("records go by Cleanup alone under the reference conventions")
	}
}

// An unsettled record's own expiry cuts its hold short, and is all a mark
// with no lease has.
func TestUnsettledExpiryAndNoLease(t *testing.T) {
	ttl := Conventions{UnsettledExpiryMs: 300}
	if !ttl.Holds(0, 1000, 299) || ttl.Holds(0, 1000, 300) {
		t.Fatal("a record's own expiry ends its hold, lease or not")
	}
	if ttl.HoldMs(1000) != 300 || ttl.HoldMs(100) != 100 {
		t.Fatal("the hold ends with the lease or the record's own expiry, whichever comes first")
	}
	if ttl.UnsettledGone(Failed, 0, 0, 299) || !ttl.UnsettledGone(Failed, 0, 0, 300) || ttl.UnsettledGone(Processed, 0, 0, 1<<40) {
		t.Fatal("an unsettled record, failed too, is gone at its own expiry; a processed one is not its to expire")
	}
	none := Conventions{Lease: LeaseNone, UnsettledExpiryMs: 5000}
	if none.LeaseUntilMs(10, 100) != 0 || !none.Holds(0, 0, 4999) || none.Holds(0, 0, 5000) || none.HoldMs(100) != 5000 {
		t.Fatal("a mark with no lease holds until its own expiry, whatever lease was asked")
	}
}

func TestLeaseEnds(t *testing.T) {
	if (Conventions{}).LeaseHolds(10, 10) || !(Conventions{LeaseEnd: LeaseEndInclusive}).LeaseHolds(10, 10) {
		t.Fatal("an exclusive lease holds at its end, or an inclusive one does not")
	}
	if (Conventions{LeaseEnd: LeaseEndInclusive}).LeaseHolds(11, 10) {
		t.Fatal("an inclusive lease holds past its end")
	}
}
