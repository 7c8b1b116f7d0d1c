package properties_test

import (
	"testing"

	"github.com/idemcheck/idemcheck/faults/scenario"
	"github.com/idemcheck/idemcheck/properties"
)

// A reduction that left worker w2, node n2 and the third event is named
// as if those were the only ones drawn.
func TestCanonicalNamesWhatAReductionLeft(t *testing.T) {
	s := &scenario.Scenario{Version: scenario.Version, Kind: scenario.KindConsumption, Consumption: &scenario.Consumption{
		Config: scenario.Config{Topic: "orders", Consumers: []string{"ledger"},
			Nodes:   []scenario.Node{{Name: "n2", SkewMs: 0}},
			Workers: []scenario.Worker{{Name: "w2", Consumer: "ledger", Node: "n2"}, {Name: "w3", Consumer: "ledger", Node: "n2"}},
			LeaseMs: 200, RetentionMs: 6400},
		Events: []scenario.Event{{ID: "evt-0003", OrderID: "ord-3", UserID: "usr-2", AmountCents: 300}},
		Steps:  []scenario.Step{{Op: scenario.OpProduce}, {Op: "deliver", Worker: "w3"}, {Op: "run", Worker: "w2"}, {Op: "skew", Node: "n2", Ms: 5}},
	}}
	c := properties.Canonical(s)
	if c == nil {
		t.Fatal("not renamed")
	}
	got := c.Consumption
	if got.Config.Nodes[0].Name != "n1" || got.Config.Workers[0].Name != "w1" || got.Config.Workers[1].Name != "w2" || got.Config.Workers[1].Node != "n1" {
		t.Errorf("config %+v", got.Config)
	}
	if e := got.Events[0]; e.ID != "evt-0001" || e.OrderID != "ord-1" || e.UserID != "usr-1" || e.AmountCents != 100 {
		t.Errorf("event %+v", e)
	}
	if got.Steps[1].Worker != "w2" || got.Steps[2].Worker != "w1" || got.Steps[3].Node != "n1" {
		t.Errorf("steps %+v", got.Steps)
	}
	if properties.Canonical(c) != nil {
		t.Error("a canonical scenario is renamed again")
	}
	if s.Consumption.Config.Workers[0].Name != "w2" {
		t.Error("the original changed")
	}
}
