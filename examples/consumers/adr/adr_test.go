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

// FuzzADR is how a team fuzzes its consumer: go test runs the seed inputs
// (and whatever go test -fuzz=FuzzADR found and left in testdata/fuzz);
// go test -fuzz=FuzzADR explores further, guided by coverage.
func FuzzADR(f *testing.F) {
	consumertest.Fuzz(f, consumertest.Consumer{
		Name:    "adr",
		Schema:  adr.Schema,
		Handler: adr.Handle,
		Effects: consumertest.PerEvent("SELECT event_id, amount_cents FROM ledger"),
		Dedupe:  "SELECT event_id FROM processed_events",
	})
}
