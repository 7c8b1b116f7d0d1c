package alwaystransient_test

import (
	"testing"

	"github.com/idemcheck/idemcheck/consumertest"
	"github.com/idemcheck/idemcheck/consumertest/laws"
	"github.com/idemcheck/idemcheck/examples/consumers/alwaystransient"
)

// TestNeverWorkingConsumerIsCaught: at the default budget (100 scenarios),
// the consumer whose every delivery fails breaks healthy-applied, though
// every event is accounted for by the dead-letter queue.
func TestNeverWorkingConsumerIsCaught(t *testing.T) {
	res, err := consumertest.Hunt(consumertest.Consumer{
		Name:    "alwaystransient",
		Schema:  alwaystransient.Schema,
		Handler: alwaystransient.Handle,
		Effects: consumertest.PerEvent("SELECT event_id, amount_cents FROM ledger"),
		Dedupe:  "SELECT event_id FROM processed_events",
	}, consumertest.Seed(1))
	if err != nil {
		t.Fatal(err)
	}
	if !res.Failed || res.Law != laws.HealthyApplied || res.Scenario.Size() > 2 {
		t.Fatalf("want LawHealthyApplied broken by a scenario of at most 2 steps, got:\n%s", res.Report())
	}
	t.Logf("found after %d scenario(s):\n%s", res.Checks, res.Report())
}
