package logapplythencommit_test

import (
	"strings"
	"testing"

	"github.com/idemcheck/idemcheck/consumertest"
	"github.com/idemcheck/idemcheck/consumertest/laws"
	"github.com/idemcheck/idemcheck/examples/consumers/logapplythencommit"
	"github.com/idemcheck/idemcheck/faults/gen"
)

// With rebalances the only fault (no crash, failure or reset of the
// group's offsets, each of which catches it too), the shrunk trace is a
// zombie and the new owner both applying one record.
func TestApplyThenCommitCreditsTwiceOnARebalance(t *testing.T) {
	res, err := consumertest.Hunt(consumertest.Consumer{
		Name:    "logapplythencommit",
		Schema:  logapplythencommit.Schema,
		Log:     &logapplythencommit.Consumer,
		Effects: consumertest.PerEvent(logapplythencommit.Effects),
	}, consumertest.Checks(500), consumertest.Seed(1),
		consumertest.Faults(gen.Weights{gen.KindCrash: 0, gen.KindFail: 0, gen.KindReplay: 0}))
	if err != nil {
		t.Fatal(err)
	}
	report := res.Report()
	if !res.Failed || res.Law != laws.SingleCredit || !strings.Contains(report, "rebalance") || res.Scenario.Size() > 8 {
		t.Fatalf("want single-credit broken by a scenario of at most 8 steps naming the rebalance, got:\n%s", report)
	}
	t.Log(report)
}
