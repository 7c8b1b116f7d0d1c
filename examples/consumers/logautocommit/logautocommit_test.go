package logautocommit_test

import (
	"testing"

	"github.com/idemcheck/idemcheck/consumertest"
	"github.com/idemcheck/idemcheck/consumertest/laws"
	"github.com/idemcheck/idemcheck/examples/consumers/logautocommit"
)

// The automatic commit runs ahead of a batch that failed half way.
func TestAutoCommitRunsAhead(t *testing.T) {
	res, err := consumertest.Hunt(consumertest.Consumer{
		Name:    "logautocommit",
		Schema:  logautocommit.Schema,
		Log:     &logautocommit.Consumer,
		Effects: consumertest.PerEvent(logautocommit.Effects),
	}, consumertest.Checks(1000), consumertest.Seed(1))
	if err != nil {
		t.Fatal(err)
	}
	if !res.Failed || (res.Law != laws.CommitAfterApply && res.Law != laws.NothingLost) {
		t.Fatalf("want the automatic commit caught (commit-after-apply or nothing-lost), got:\n%s", res.Report())
	}
	t.Log(res.Report())
}
