package report

// Exploration is what a run of the model checker (fuzzrun explore, mode
// "explore") reports beside its coverage table and its counterexample:
// what was searched, how far and how fast, and the verdict. A clean
// exploration is a proof for its bound, so the page says exactly which
// bound; a rate or a depth alone would not.
type Exploration struct {
	// World describes the world searched, e.g. "events ok, 1 group(s) x 2
	// worker(s), 1 node(s)"; for projections, the delivery orders.
	World string
	// Menu is the step menu of a consumption exploration.
	Menu []string
	// Engine is the engine that searched (compact or runner).
	Engine string
	// DepthAsked is the depth the run was asked to reach.
	DepthAsked int
	// Levels are the new states and transitions of each depth, in order.
	Levels []ExploreLevel
	// States are the distinct states, Transitions the transitions taken
	// and Skipped those the partial-order reduction left out.
	States, Transitions, Skipped int64
	// StatesPerSecond and BytesPerState are the search's figures;
	// BytesPerState is left out of the page when it is 0 (not measured).
	StatesPerSecond, BytesPerState float64
	// Schedules, for a search that plays schedules (a consumer's model
	// check), counts them, and SchedulesPerSecond is its speed.
	Schedules          int64
	SchedulesPerSecond float64
	// Histories are the causal histories of a projection exploration, each
	// judged under every delivery order, instead of depths.
	Histories []HistoryRow
	// Verdict is the one-line verdict: "verified: ..." or the violation.
	Verdict string
	// Violated says a counterexample was found (it is in Run.Cases).
	Violated bool
}

// ExploreLevel is one depth of a breadth-first exploration.
type ExploreLevel struct {
	Depth       int
	States      int
	Transitions int64
}

// HistoryRow is one projection history's line: how many delivery orders
// were judged and what came of them.
type HistoryRow struct {
	Name, Doc string
	Orders    int
	Verdict   string
	Violated  bool
}
