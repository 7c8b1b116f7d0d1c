package logcommitfirst_test

import (
	"testing"

	"github.com/idemcheck/idemcheck/consumertest"
	"github.com/idemcheck/idemcheck/consumertest/laws"
	"github.com/idemcheck/idemcheck/examples/consumers/logcommitfirst"
)

// The model checker finds what Check finds, under the same law, at the
// first commit.
func TestVerifyFindsTheEarlyCommit(t *testing.T) {
	res, err := consumertest.Explore(consumertest.Consumer{
		Name:    "logcommitfirst",
		Schema:  logcommitfirst.Schema,
		Log:     &logcommitfirst.Consumer,
		Effects: consumertest.PerEvent(logcommitfirst.Effects),
	}, consumertest.DefaultBounds)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Failed || res.Law != laws.CommitAfterApply {
		t.Fatalf("want commit-after-apply, got:\n%s", res.Report())
	}
	t.Log(res.Report())
}
