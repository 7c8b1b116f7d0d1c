package balance_test

import (
	"testing"

	"github.com/idemcheck/idemcheck/consumertest"
	"github.com/idemcheck/idemcheck/examples/consumers/balance"
)

func TestBalanceConsumerIsNeverFlagged(t *testing.T) {
	consumertest.Check(t, consumertest.Consumer{
		Name:    "balance",
		Schema:  balance.Schema,
		Handler: balance.Handle,
		Effects: consumertest.Aggregate("SELECT user_id, balance_cents FROM accounts"),
		Dedupe:  "SELECT event_id FROM processed_events",
	}, consumertest.Checks(300))
}
