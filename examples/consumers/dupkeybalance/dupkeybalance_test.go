package dupkeybalance_test

import (
	"os"
	"testing"

	"github.com/idemcheck/idemcheck/consumertest"
	"github.com/idemcheck/idemcheck/consumertest/laws"
	"github.com/idemcheck/idemcheck/examples/consumers/dupkeybalance"
)

func TestUpsertedBalanceIsCreditedAgainOnARedelivery(t *testing.T) {
	dsn := os.Getenv("IDEMCHECK_MYSQL_DSN")
	if dsn == "" {
		t.Skip("IDEMCHECK_MYSQL_DSN is not set: skipping the ON DUPLICATE KEY UPDATE consumer, which runs on MySQL only")
	}
	res, err := consumertest.Hunt(consumertest.Consumer{
		Name:    "dupkeybalance",
		Schema:  dupkeybalance.Schema,
		Handler: dupkeybalance.Handle,
		Effects: consumertest.Aggregate("SELECT user_id, balance_cents FROM accounts"),
		Dedupe:  "SELECT event_id FROM processed_events",
	}, consumertest.Checks(1000), consumertest.Seed(1), consumertest.MySQL(dsn))
	if err != nil {
		t.Fatal(err)
	}
	if !res.Failed || res.Law != laws.SingleCredit || res.Scenario.Size() > 8 {
		t.Fatalf("want %s broken by a scenario of at most 8 steps, got:\n%s", laws.SingleCredit, res.Report())
	}
	t.Logf("found after %d scenario(s):\n%s", res.Checks, res.Report())
}
