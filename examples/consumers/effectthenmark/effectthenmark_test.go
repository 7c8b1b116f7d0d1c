package effectthenmark_test

import (
	"testing"

	"github.com/idemcheck/idemcheck/consumertest"
	"github.com/idemcheck/idemcheck/consumertest/laws"
	"github.com/idemcheck/idemcheck/examples/consumers/effectthenmark"
)

func TestEffectThenMarkCreditsTwiceAfterACrash(t *testing.T) {
	res, err := consumertest.Hunt(consumertest.Consumer{
		Name:    "effectthenmark",
		Schema:  effectthenmark.Schema,
		Handler: effectthenmark.Handle,
		Effects: consumertest.PerEvent("SELECT event_id, amount_cents FROM ledger"),
		Dedupe:  "SELECT event_id FROM processed_events",
	}, consumertest.Checks(2000), consumertest.Seed(1))
	if err != nil {
		t.Fatal(err)
	}
	if !res.Failed || res.Law != laws.SingleCredit || res.Scenario.Size() > 8 {
		t.Fatalf("want LawSingleCredit broken by a scenario of at most 8 steps, got:\n%s", res.Report())
	}
	t.Logf("found after %d scenario(s):\n%s", res.Checks, res.Report())
}
