package brokers_test

import (
	"testing"

	"github.com/idemcheck/idemcheck/conformance/brokers/liveapp"
	"github.com/idemcheck/idemcheck/examples/consumers/catalog"
	"github.com/idemcheck/idemcheck/impl/adapter/natsbroker"
	"github.com/idemcheck/idemcheck/properties"
)

// TestLiveTeamConsumersOverNATS: a team's consumer as written (the examples'
// handlers over *sql.DB) driven by a real broker. The correct ones keep
// every invariant over the advisory-DLQ configuration; the one that
// dedupes with an in-process cache credits an event twice when a crash
// after its commit (before the ack) restarts it and JetStream redelivers,
// and the one that never works (every delivery nacked into the DLQ) fails
// nothing-lost: a healthy event the consumer gave up on by itself.
func TestLiveTeamConsumersOverNATS(t *testing.T) {
	f, err := natsbroker.New(natsbroker.AdvisoryDLQ)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	// The invariant each broken consumer fails over a broker.
	fails := map[string]string{"lru": properties.LiveSingleCredit, "alwaystransient": properties.LiveNothingLost}
	for _, name := range []string{"adr", "insertfirst", "lru", "alwaystransient"} {
		t.Run(name, func(t *testing.T) {
			e, ok := catalog.Lookup(name)
			if !ok {
				t.Fatalf("no example consumer %s", name)
			}
			app, err := liveapp.New(e.Consumer)
			if err != nil {
				t.Fatal(err)
			}
			rep, err := properties.RunLiveCampaign(t.Context(), properties.LiveCampaign{Factory: f, App: app, Runs: 24, Seed: 1, Workers: 4})
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%d runs, %d deliveries, %d late; coverage %v", rep.Runs, rep.Deliveries, rep.LateRuns, rep.Coverage)
			for _, c := range rep.Cells {
				want := properties.LiveHolds
				if c.Invariant == fails[name] {
					want = properties.LiveFails
				}
				switch {
				case c.Status == want:
				case want == properties.LiveHolds && c.Status == properties.LiveUnconfirmed:
					t.Logf("%s: unconfirmed: %s", c.Invariant, c.Detail)
				case want == properties.LiveFails && c.Status == properties.LiveUnconfirmed && rep.LateRuns > 0:
					t.Logf("%s broke only in late runs: unconfirmed on this loaded machine", c.Invariant)
				default:
					t.Errorf("%s: %s, want %s (%s)\n%v", c.Invariant, c.Status, want, c.Detail, c.Trace)
				}
			}
		})
	}
}

// TestLiveTeamConsumerWithTotalsIsRefused: a consumer whose effects are
// totals (Aggregate) cannot be judged per event in a live run; it is
// refused at once, saying why.
func TestLiveTeamConsumerWithTotalsIsRefused(t *testing.T) {
	e, ok := catalog.Lookup("balance")
	if !ok {
		t.Fatal("no example consumer balance")
	}
	if _, err := liveapp.New(e.Consumer); err == nil {
		t.Fatal("a consumer with aggregate effects was accepted")
	}
}
