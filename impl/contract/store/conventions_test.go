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
	} {
		err := c.conv.Validate()
		if err == nil || !strings.Contains(err.Error(), c.field) {
			t.Errorf("%+v: error %v, want one naming %s", c.conv, err, c.field)
		}
	}
	if err := (Conventions{}).Validate(); err != nil {
		t.Errorf("the zero conventions: %v", err)
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
