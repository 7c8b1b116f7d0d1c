package scenario

import (
	"strings"
	"testing"
)

func projValid() *Scenario {
	return &Scenario{Version: Version, Kind: KindProjection, Projection: &Projection{
		Nodes: []Node{{Name: "A", SkewMs: 300_000}, {Name: "B", SkewMs: -180_000}},
		Steps: []ProjectionStep{
			{Op: OpEmit, Node: "A", ID: "e1", Order: "o1", Kind: EventOrderCreated},
			{Op: OpAdvance, Ms: 500},
			{Op: OpReceive, Node: "B", Event: "e1"},
			{Op: OpEmit, Node: "B", ID: "e2", Order: "o1", Kind: EventOrderPaid},
			{Op: OpSkew, Node: "A", Ms: 0},
			{Op: OpClockStep, Node: "B", Ms: -60_000},
			{Op: OpEmit, Node: "B", ID: "e3", Order: "o1", Kind: EventOrderCancelled},
		},
		Replicas: []Replica{{Name: "r1", Deliveries: []string{"e3", "e1", "e2", "e1"}}},
	}}
}

func TestProjectionValidateAcceptsACausalHistory(t *testing.T) {
	s := projValid()
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	if got := s.Size(); got != 7+4 {
		t.Fatalf("Size() = %d; want 7 steps + 4 deliveries", got)
	}
	js, err := Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	back, err := Unmarshal(js)
	if err != nil {
		t.Fatalf("round trip: %v\n%s", err, js)
	}
	again, _ := Marshal(back)
	if string(again) != string(js) {
		t.Fatalf("round trip changed the encoding:\n%s\n---\n%s", js, again)
	}
	for _, field := range []string{`"op": "emit"`, `"order": "o1"`, `"kind": "OrderCreated"`, `"event": "e1"`, `"deliveries"`, `"skewMs": -180000`} {
		if !strings.Contains(string(js), field) {
			t.Errorf("JSON lacks %s:\n%s", field, js)
		}
	}
}

func TestProjectionValidateNamesTheField(t *testing.T) {
	cases := []struct {
		name   string
		break_ func(p *Projection)
		want   string
	}{
		{"no nodes", func(p *Projection) { p.Nodes = nil }, "projection.nodes: need at least one"},
		{"repeated node", func(p *Projection) { p.Nodes[1].Name = "A" }, "projection.nodes[1].name"},
		{"unknown op", func(p *Projection) { p.Steps[1].Op = "teleport" }, "projection.steps[1].op"},
		{"unknown node", func(p *Projection) { p.Steps[0].Node = "Z" }, "projection.steps[0].node"},
		{"advance on a node", func(p *Projection) { p.Steps[1].Node = "A" }, "projection.steps[1].node"},
		{"time backwards", func(p *Projection) { p.Steps[1].Ms = -1 }, "projection.steps[1].ms"},
		{"empty id", func(p *Projection) { p.Steps[0].ID = "" }, "projection.steps[0].id"},
		{"repeated id", func(p *Projection) { p.Steps[3].ID = "e1" }, "projection.steps[3].id"},
		{"empty order", func(p *Projection) { p.Steps[0].Order = "" }, "projection.steps[0].order"},
		{"order not created first", func(p *Projection) { p.Steps[0].Kind = EventOrderPaid }, "projection.steps[0].kind"},
		{"unknown kind", func(p *Projection) { p.Steps[3].Kind = "OrderShipped" }, "projection.steps[3].kind"},
		{"paid twice", func(p *Projection) { p.Steps[6].Kind = EventOrderPaid }, "projection.steps[6].kind"},
		{"fork: emit without the latest", func(p *Projection) { p.Steps[2].Op, p.Steps[2].Node, p.Steps[2].Event = OpAdvance, "", "" }, "projection.steps[3].node: B emits for order \"o1\" without having emitted or received its latest event \"e1\""},
		{"receive before emit", func(p *Projection) { p.Steps[2].Event = "e2" }, "projection.steps[2].event"},
		{"receive own event", func(p *Projection) { p.Steps[2].Node = "A" }, "projection.steps[2].event"},
		{"no replicas", func(p *Projection) { p.Replicas = nil }, "projection.replicas: need at least one"},
		{"unnamed replica", func(p *Projection) { p.Replicas[0].Name = "" }, "projection.replicas[0].name"},
		{"unknown delivery", func(p *Projection) { p.Replicas[0].Deliveries[1] = "e9" }, "projection.replicas[0].deliveries[1]"},
		{"missing delivery", func(p *Projection) { p.Replicas[0].Deliveries = []string{"e1", "e2"} }, "projection.replicas[0].deliveries: \"e3\" is never delivered"},
		{"too many copies", func(p *Projection) {
			for range MaxCopies {
				p.Replicas[0].Deliveries = append(p.Replicas[0].Deliveries, "e2")
			}
		}, "projection.replicas[0].deliveries[13]"},
	}
	for _, c := range cases {
		s := projValid()
		c.break_(s.Projection)
		err := s.Validate()
		if err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%s: err = %v; want one starting %q", c.name, err, c.want)
		}
	}
}
