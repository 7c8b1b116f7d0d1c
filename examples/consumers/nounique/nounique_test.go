package nounique_test

import (
	"testing"

	"github.com/idemcheck/idemcheck/consumertest"
	"github.com/idemcheck/idemcheck/consumertest/laws"
	"github.com/idemcheck/idemcheck/examples/consumers/nounique"
)

func TestCheckThenActCreditsTwice(t *testing.T) {
	res, err := consumertest.Hunt(consumertest.Consumer{
		Name:    "nounique",
		Schema:  nounique.Schema,
		Handler: nounique.Handle,
		Effects: consumertest.PerEvent("SELECT event_id, amount_cents FROM ledger"),
	}, consumertest.Checks(2000), consumertest.Seed(1))
	if err != nil {
		t.Fatal(err)
	}
	if !res.Failed || res.Law != laws.SingleCredit || res.Scenario.Size() > 8 {
		t.Fatalf("want LawSingleCredit broken by a scenario of at most 8 steps, got:\n%s", res.Report())
	}
	t.Logf("found after %d scenario(s):\n%s", res.Checks, res.Report())
}
