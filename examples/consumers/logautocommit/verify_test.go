package logautocommit_test

import (
	"testing"

	"github.com/idemcheck/idemcheck/consumertest"
	"github.com/idemcheck/idemcheck/consumertest/laws"
	"github.com/idemcheck/idemcheck/examples/consumers/logautocommit"
)

// The model checker finds what Check finds: within the default bounds'
// second world, time moves by the automatic commit interval after a
// failed batch, and the automatic commit runs ahead of it.
func TestVerifyFindsTheAutoCommit(t *testing.T) {
	res, err := consumertest.Explore(consumertest.Consumer{
		Name:    "logautocommit",
		Schema:  logautocommit.Schema,
		Log:     &logautocommit.Consumer,
		Effects: consumertest.PerEvent(logautocommit.Effects),
	}, consumertest.DefaultBounds)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Failed || (res.Law != laws.CommitAfterApply && res.Law != laws.NothingLost) {
		t.Fatalf("want commit-after-apply or nothing-lost, got:\n%s", res.Report())
	}
	t.Log(res.Report())
}
