package explore

import "github.com/idemcheck/idemcheck/faults/scenario"

// NamedHistory is a small causal history of skewed nodes, named so that a
// person can ask for it (fuzzrun explore -projection -history NAME) and
// documented so that a report says what it provokes.
type NamedHistory struct {
	// Name is how the history is asked for.
	Name string
	// Doc says what the history does and which bug it is built to expose.
	Doc string
	// History is the causal history: nodes and steps, no replicas
	// (ExploreProjection supplies every delivery order).
	History *scenario.Projection
}

// ProjectionHistories is the catalogue of small histories that, explored
// under every delivery order with two copies of each event, find every
// projection mutant (TestExplorationFindsEveryProjectionMutant) while the
// reference passes them all. It is the default of fuzzrun explore
// -projection: a projector or an HLC that survives all of them has no bug
// these histories can show. Each call returns fresh values, so a caller may
// change what it gets.
func ProjectionHistories() []NamedHistory {
	return []NamedHistory{
		{
			Name: "skew",
			Doc: "A runs 5 minutes ahead and emits OrderCreated; B, 3 minutes behind, receives it and cancels " +
				"a second later: the cancellation is causally later but stamped earlier by B's wall clock",
			History: &scenario.Projection{
				Nodes: []scenario.Node{{Name: "A", SkewMs: 5 * 60_000}, {Name: "B", SkewMs: -3 * 60_000}},
				Steps: []scenario.ProjectionStep{
					{Op: scenario.OpEmit, Node: "A", ID: "e1", Order: "o1", Kind: scenario.EventOrderCreated},
					{Op: scenario.OpAdvance, Ms: 500},
					{Op: scenario.OpReceive, Node: "B", Event: "e1"},
					{Op: scenario.OpAdvance, Ms: 500},
					{Op: scenario.OpEmit, Node: "B", ID: "e2", Order: "o1", Kind: scenario.EventOrderCancelled},
				},
			},
		},
		{
			Name: "stepBack",
			Doc:  "A emits OrderCreated, its wall clock steps a minute back (an NTP step), then it emits OrderPaid",
			History: &scenario.Projection{
				Nodes: []scenario.Node{{Name: "A"}},
				Steps: []scenario.ProjectionStep{
					{Op: scenario.OpEmit, Node: "A", ID: "e1", Order: "o1", Kind: scenario.EventOrderCreated},
					{Op: scenario.OpClockStep, Node: "A", Ms: -60_000},
					{Op: scenario.OpEmit, Node: "A", ID: "e2", Order: "o1", Kind: scenario.EventOrderPaid},
				},
			},
		},
		{
			Name: "ahead",
			Doc: "A runs 100 ms ahead (well within a max offset of 500 ms) and B receives its OrderCreated at once, " +
				"then cancels: the merge must take A's stamp, not refuse it",
			History: &scenario.Projection{
				Nodes: []scenario.Node{{Name: "A", SkewMs: 100}, {Name: "B"}},
				Steps: []scenario.ProjectionStep{
					{Op: scenario.OpEmit, Node: "A", ID: "e1", Order: "o1", Kind: scenario.EventOrderCreated},
					{Op: scenario.OpReceive, Node: "B", Event: "e1"},
					{Op: scenario.OpEmit, Node: "B", ID: "e2", Order: "o1", Kind: scenario.EventOrderCancelled},
				},
			},
		},
		{
			Name: "delayed",
			Doc: "no skew: A's OrderCreated waits 2 s in the queue before B receives it and cancels; " +
				"a message merely delayed must not be refused",
			History: &scenario.Projection{
				Nodes: []scenario.Node{{Name: "A"}, {Name: "B"}},
				Steps: []scenario.ProjectionStep{
					{Op: scenario.OpEmit, Node: "A", ID: "e1", Order: "o1", Kind: scenario.EventOrderCreated},
					{Op: scenario.OpAdvance, Ms: 2000},
					{Op: scenario.OpReceive, Node: "B", Event: "e1"},
					{Op: scenario.OpEmit, Node: "B", ID: "e2", Order: "o1", Kind: scenario.EventOrderCancelled},
				},
			},
		},
		{
			Name: "burst",
			Doc: "A stamps a burst of 70,000 local events within one millisecond between OrderCreated and " +
				"OrderPaid: the logical counter must carry, not wrap",
			History: &scenario.Projection{
				Nodes: []scenario.Node{{Name: "A"}},
				Steps: []scenario.ProjectionStep{
					{Op: scenario.OpEmit, Node: "A", ID: "e1", Order: "o1", Kind: scenario.EventOrderCreated},
					{Op: scenario.OpBurst, Node: "A", Count: 70_000},
					{Op: scenario.OpEmit, Node: "A", ID: "e2", Order: "o1", Kind: scenario.EventOrderPaid},
				},
			},
		},
	}
}

// ProjectionHistory returns the catalogue's history called name.
func ProjectionHistory(name string) (NamedHistory, bool) {
	for _, h := range ProjectionHistories() {
		if h.Name == name {
			return h, true
		}
	}
	return NamedHistory{}, false
}
