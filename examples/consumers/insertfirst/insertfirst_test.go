package insertfirst_test

import (
	"testing"

	"github.com/idemcheck/idemcheck/consumertest"
	"github.com/idemcheck/idemcheck/examples/consumers/insertfirst"
)

func TestInsertFirstConsumerIsNeverFlagged(t *testing.T) {
	consumertest.Check(t, consumertest.Consumer{
		Name:    "insertfirst",
		Schema:  insertfirst.Schema,
		Handler: insertfirst.Handle,
		Effects: consumertest.PerEvent("SELECT event_id, amount_cents FROM ledger"),
		Dedupe:  "SELECT event_id FROM processed_events",
	}, consumertest.Checks(300))
}
