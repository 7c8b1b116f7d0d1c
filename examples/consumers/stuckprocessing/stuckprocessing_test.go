package stuckprocessing_test

import (
	"testing"

	"github.com/idemcheck/idemcheck/consumertest"
	"github.com/idemcheck/idemcheck/consumertest/laws"
	"github.com/idemcheck/idemcheck/examples/consumers/stuckprocessing"
)

// TestClaimLeftProcessingIsCaught: at the default budget, the claim left
// 'processing' by one failed attempt, answered "locked" by every
// redelivery until the DLQ, breaks healthy-applied.
func TestClaimLeftProcessingIsCaught(t *testing.T) {
	res, err := consumertest.Hunt(consumertest.Consumer{
		Name:    "stuckprocessing",
		Schema:  stuckprocessing.Schema,
		Handler: stuckprocessing.Handle,
		Effects: consumertest.PerEvent("SELECT event_id, amount_cents FROM ledger"),
		Dedupe:  stuckprocessing.Dedupe,
	}, consumertest.Seed(1))
	if err != nil {
		t.Fatal(err)
	}
	if !res.Failed || res.Law != laws.HealthyApplied || res.Scenario.Size() > 8 {
		t.Fatalf("want LawHealthyApplied broken by a scenario of at most 8 steps, got:\n%s", res.Report())
	}
	t.Logf("found after %d scenario(s):\n%s", res.Checks, res.Report())
}
