package adr_test

import (
	"testing"

	"github.com/idemcheck/idemcheck/consumertest"
	"github.com/idemcheck/idemcheck/examples/consumers/adr"
)

func TestADRConsumerIsNeverFlagged(t *testing.T) {
	consumertest.Check(t, consumertest.Consumer{
		Name:    "adr",
		Schema:  adr.Schema,
		Handler: adr.Handle,
		Effects: consumertest.PerEvent("SELECT event_id, amount_cents FROM ledger"),
		Dedupe:  "SELECT event_id FROM processed_events",
	}, consumertest.Checks(300))
}
