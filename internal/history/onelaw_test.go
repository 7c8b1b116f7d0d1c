package history_test

import (
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/idemcheck/idemcheck/consumertest"
	"github.com/idemcheck/idemcheck/consumertest/laws"
	cscenario "github.com/idemcheck/idemcheck/consumertest/scenario"
	"github.com/idemcheck/idemcheck/examples/consumers/adr"
	"github.com/idemcheck/idemcheck/faults/scenario"
	"github.com/idemcheck/idemcheck/impl/contract/broker"
	"github.com/idemcheck/idemcheck/impl/system"
	"github.com/idemcheck/idemcheck/internal/history"
	"github.com/idemcheck/idemcheck/internal/law"
	"github.com/idemcheck/idemcheck/properties"
)

// nothingDeadLettered is a law this test adds, one no judge should keep:
// nothing sits in the dead-letter queue once quiet. Every run with a
// poison event breaks it.
const nothingDeadLettered = "test-nothing-dead-lettered"

// TestALawIsAddedInOnePlace registers a law and its judge function, and
// nothing else: the reference world's judge (package properties) and
// consumertest's judge both judge it, over their own runs' histories, and
// it breaks on a tiny broken history.
func TestALawIsAddedInOnePlace(t *testing.T) {
	var mu sync.Mutex
	seen := map[history.Source]bool{}
	defer law.Register(law.Law{ID: nothingDeadLettered, Property: law.NothingLost, Doc: "nothing sits in the dead-letter queue once quiet", Needs: law.BlackBox})()
	defer history.Register(nothingDeadLettered, func(h *history.History) []history.Breach {
		mu.Lock()
		seen[h.Source] = true
		mu.Unlock()
		var details []string
		for _, d := range h.DLQQuiet {
			details = append(details, fmt.Sprintf("%s sits in %s's DLQ", d.Key, d.Group))
		}
		if len(details) == 0 {
			return nil
		}
		return []history.Breach{{Law: nothingDeadLettered, Summary: "something was dead-lettered", Details: details}}
	})()

	// A tiny broken history, and a clean one.
	broken := &history.History{Quiesced: true, DLQQuiet: []broker.DLQEntry{{Group: "g1", Key: "e1"}}}
	if bs := history.Judge(broken, nothingDeadLettered); len(bs) != 1 || bs[0].Details[0] != "e1 sits in g1's DLQ" {
		t.Fatalf("the broken history: %+v", bs)
	}
	if bs := history.Judge(&history.History{Quiesced: true}, nothingDeadLettered); len(bs) != 0 {
		t.Fatalf("the clean history: %+v", bs)
	}

	// The reference world: a poison event, produced once, ends in the DLQ.
	sc := &scenario.Scenario{Version: scenario.Version, Kind: scenario.KindConsumption, Consumption: &scenario.Consumption{
		Config: scenario.Config{Topic: "orders", Consumers: []string{"g1"}, Nodes: []scenario.Node{{Name: "n1"}},
			Workers: []scenario.Worker{{Name: "w1", Consumer: "g1", Node: "n1"}},
			Policy:  broker.Policy{MaxAttempts: 2, BackoffMs: 100, MaxBackoffMs: 400, AckTimeoutMs: 1000}, LeaseMs: 1000, RetentionMs: 10_000},
		Events: []scenario.Event{{ID: "e1", OrderID: "o1", UserID: "u1", AmountCents: 100, Fate: scenario.FatePoison}},
		Steps:  []scenario.Step{{Op: scenario.OpProduce, Event: 0}}}}
	_, verdicts, err := properties.Judge(sc, system.Reference(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range verdicts {
		want := v.Property == law.NothingLost
		if broke := !v.Pass && v.Law == nothingDeadLettered; broke != want {
			t.Errorf("reference world, %s: pass=%t law=%q %v", v.Property, v.Pass, v.Law, v.Details)
		}
	}

	// A team's consumer: the correct one, given a poison event.
	c := consumertest.Consumer{Name: "adr", Schema: adr.Schema, Handler: adr.Handle,
		Effects: consumertest.PerEvent("SELECT event_id, amount_cents FROM ledger"), Dedupe: "SELECT event_id FROM processed_events"}
	s := &cscenario.Scenario{Version: 1, Workers: 1, Policy: cscenario.DefaultPolicy,
		Events: []cscenario.Event{{ID: "e1", User: "u1", Poison: true}}}
	res, err := consumertest.Replay(c, s)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Failed || res.Law != nothingDeadLettered || !slices.ContainsFunc(res.Breaches, func(b laws.Breach) bool { return b.Law == nothingDeadLettered }) {
		t.Errorf("consumertest: failed=%t law=%q\n%s", res.Failed, res.Law, res.Report())
	}
	if !seen[history.Reference] || !seen[history.Consumer] {
		t.Errorf("judged over the histories of %v; want the reference world's and a team consumer's", seen)
	}
}
