package claimstuck_test

import (
	"testing"

	"github.com/idemcheck/idemcheck/consumertest"
	"github.com/idemcheck/idemcheck/consumertest/laws"
	"github.com/idemcheck/idemcheck/examples/consumers/claimstuck"
)

func TestClaimNeverReleasedLosesTheEvent(t *testing.T) {
	res, err := consumertest.Hunt(consumertest.Consumer{
		Name:    "claimstuck",
		Schema:  claimstuck.Schema,
		Handler: claimstuck.Handle,
		Effects: consumertest.PerEvent("SELECT event_id, amount_cents FROM ledger"),
	}, consumertest.Checks(2000), consumertest.Seed(1))
	if err != nil {
		t.Fatal(err)
	}
	if !res.Failed || res.Law != laws.NothingLost || res.Scenario.Size() > 8 {
		t.Fatalf("want LawNothingLost broken by a scenario of at most 8 steps, got:\n%s", res.Report())
	}
	t.Logf("found after %d scenario(s):\n%s", res.Checks, res.Report())
}
