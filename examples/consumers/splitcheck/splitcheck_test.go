package splitcheck_test

import (
	"testing"

	"github.com/idemcheck/idemcheck/consumertest"
	"github.com/idemcheck/idemcheck/consumertest/laws"
	"github.com/idemcheck/idemcheck/examples/consumers/splitcheck"
)

func TestSplitCheckCreditsTwice(t *testing.T) {
	res, err := consumertest.Hunt(consumertest.Consumer{
		Name:    "splitcheck",
		Schema:  splitcheck.Schema,
		Handler: splitcheck.Handle,
		Effects: consumertest.PerEvent("SELECT event_id, amount_cents FROM ledger"),
		Dedupe:  "SELECT event_id FROM processed_events",
	}, consumertest.Checks(1000), consumertest.Seed(1))
	if err != nil {
		t.Fatal(err)
	}
	if !res.Failed || res.Law != laws.SingleCredit || res.Scenario.Size() > 8 {
		t.Fatalf("want single-credit broken by a scenario of at most 8 steps, got:\n%s", res.Report())
	}
	t.Log(res.Report())
}
