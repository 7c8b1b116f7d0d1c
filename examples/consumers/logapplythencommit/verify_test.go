package logapplythencommit_test

import (
	"strings"
	"testing"

	"github.com/idemcheck/idemcheck/consumertest"
	"github.com/idemcheck/idemcheck/consumertest/laws"
	"github.com/idemcheck/idemcheck/consumertest/scenario"
	"github.com/idemcheck/idemcheck/examples/consumers/logapplythencommit"
)

// The model checker finds what Check finds, under the same law: with
// crashes and failures out of the bounds, the counterexample is a
// rebalance while a zombie still holds its batch.
func TestVerifyFindsTheRebalance(t *testing.T) {
	c := consumertest.Consumer{
		Name:    "logapplythencommit",
		Schema:  logapplythencommit.Schema,
		Log:     &logapplythencommit.Consumer,
		Effects: consumertest.PerEvent(logapplythencommit.Effects),
	}
	res, err := consumertest.Explore(c, consumertest.Bounds{Events: []scenario.Fate{scenario.FateOK}, Workers: 2, Preemptions: 1, Rebalances: 1})
	if err != nil {
		t.Fatal(err)
	}
	report := res.Report()
	if !res.Failed || res.Law != laws.SingleCredit || !strings.Contains(report, "the group rebalances: p0 moves from w1 to w2 while w1 holds its batch") {
		t.Fatalf("want single-credit broken by a rebalance under a zombie, got:\n%s", report)
	}
	t.Log(report)
}

// Within the default bounds too.
func TestVerifyDefaultBounds(t *testing.T) {
	res, err := consumertest.Explore(consumertest.Consumer{
		Name:    "logapplythencommit",
		Schema:  logapplythencommit.Schema,
		Log:     &logapplythencommit.Consumer,
		Effects: consumertest.PerEvent(logapplythencommit.Effects),
	}, consumertest.DefaultBounds)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Failed || res.Law != laws.SingleCredit {
		t.Fatalf("want single-credit, got:\n%s", res.Report())
	}
}
