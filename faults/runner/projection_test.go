package runner

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/idemcheck/idemcheck/faults/gen"
	"github.com/idemcheck/idemcheck/faults/scenario"
	"github.com/idemcheck/idemcheck/impl/system"
)

// projSkewDemo is the story of the timestamp bug: A runs five minutes ahead,
// B three minutes behind; A creates the order, B hears of it and cancels it a
// second later in true time.
func projSkewDemo() *scenario.Scenario {
	return &scenario.Scenario{Version: scenario.Version, Kind: scenario.KindProjection, Projection: &scenario.Projection{
		Nodes: []scenario.Node{{Name: "A", SkewMs: 5 * 60_000}, {Name: "B", SkewMs: -3 * 60_000}},
		Steps: []scenario.ProjectionStep{
			{Op: scenario.OpEmit, Node: "A", ID: "e1", Order: "o1", Kind: scenario.EventOrderCreated},
			{Op: scenario.OpAdvance, Ms: 500},
			{Op: scenario.OpReceive, Node: "B", Event: "e1"},
			{Op: scenario.OpAdvance, Ms: 500},
			{Op: scenario.OpEmit, Node: "B", ID: "e2", Order: "o1", Kind: scenario.EventOrderCancelled},
			{Op: scenario.OpClockStep, Node: "B", Ms: -60_000},
		},
		Replicas: []scenario.Replica{{Name: "r1", Deliveries: []string{"e1", "e2"}}, {Name: "r2", Deliveries: []string{"e2", "e1", "e2"}}},
	}}
}

// projRender is everything a run produced, as bytes.
func projRender(t *testing.T, out *Outcome) []byte {
	t.Helper()
	res, err := json.Marshal(out.Projection)
	if err != nil {
		t.Fatal(err)
	}
	return append([]byte(out.Trace.String()), res...)
}

// The same scenario gives the same trace and result, byte for byte: the
// determinism every shrink and every corpus replay depends on.
func TestProjectionRunIsDeterministic(t *testing.T) {
	scenarios := []*scenario.Scenario{projSkewDemo()}
	for i := range 30 {
		scenarios = append(scenarios, gen.Projection().Example(i))
	}
	for i, s := range scenarios {
		first, err := RunProjection(s, system.Reference())
		if err != nil {
			t.Fatalf("scenario %d: %v", i, err)
		}
		// Through a JSON round trip, as a corpus replay would see it.
		js, err := scenario.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		again, err := scenario.Unmarshal(js)
		if err != nil {
			t.Fatalf("scenario %d does not round-trip: %v", i, err)
		}
		second, err := RunProjection(again, system.Reference())
		if err != nil {
			t.Fatal(err)
		}
		if a, b := projRender(t, first), projRender(t, second); !bytes.Equal(a, b) {
			t.Fatalf("scenario %d: two runs differ:\n%s\n---\n%s", i, a, b)
		}
	}
}

func TestProjectionTraceTellsTheStory(t *testing.T) {
	out, err := RunProjection(projSkewDemo(), system.Reference())
	if err != nil {
		t.Fatal(err)
	}
	trace := out.Trace.String()
	for _, want := range []string{
		"node A wall clock runs +300000ms off true time",
		"A emits e1 OrderCreated o1: wall reads t=+300000ms, occurredAt 1700000300000; hlc tick 1700000300000.0@A; outbox seq 1",
		"B receives e1 (hlc 1700000300000.0@A): wall reads t=-179500ms; hlc merge with its last (none) -> 1700000300000.1@B",
		"B emits e2 OrderCancelled o1: wall reads t=-179000ms, occurredAt 1699999821000; hlc tick 1700000300000.2@B; outbox seq 2",
		"node B clock steps -60000ms",
		"replica r1 timestamp-lww delivery 2/2: drops e2 OrderCancelled o1",
		"replica r1 ends: seq o1=cancelled; hlc o1=cancelled; timestamp-lww (baseline) o1=created",
	} {
		if !strings.Contains(trace, want) {
			t.Errorf("trace lacks %q:\n%s", want, trace)
		}
	}
	res := out.Projection
	want := []Happening{{Node: "A", Emit: "e1"}, {Node: "B", Receive: "e1"}, {Node: "B", Emit: "e2"}}
	if !slices.Equal(res.History, want) || res.Events[1].Prev != "e1" {
		t.Errorf("history = %v, e2's prev %q; want %v, e1", res.History, res.Events[1].Prev, want)
	}
	if len(res.Readings) != 3 || res.Readings[1].Op != "merge" || res.Readings[1].Remote != res.Events[0].Event.HLC {
		t.Errorf("readings = %+v; want tick, merge of e1's stamp, tick", res.Readings)
	}
}

func TestRunProjectionRefusesWhatItCannotPlay(t *testing.T) {
	s := projSkewDemo()
	noParts := system.Reference()
	noParts.Projection = nil
	if _, err := RunProjection(s, noParts); err == nil || !strings.Contains(err.Error(), "no projection parts") {
		t.Errorf("a target without projection parts: err = %v", err)
	}
	bad := projSkewDemo()
	bad.Projection.Steps[4].Node = "Z" // not a listed node
	if _, err := RunProjection(bad, system.Reference()); err == nil || !strings.Contains(err.Error(), "projection.steps[4].node") {
		t.Errorf("an invalid scenario: err = %v", err)
	}
	cons := &scenario.Scenario{Version: scenario.Version, Kind: scenario.KindConsumption}
	if _, err := RunProjection(cons, system.Reference()); err == nil {
		t.Errorf("a consumption scenario was accepted")
	}
	twice := system.Reference()
	p := *twice.Projection
	p.Baselines = append(p.Baselines, p.Projectors[0])
	twice.Projection = &p
	if _, err := RunProjection(s, twice); err == nil || !strings.Contains(err.Error(), "repeated") {
		t.Errorf("a projector named twice: err = %v", err)
	}
}
