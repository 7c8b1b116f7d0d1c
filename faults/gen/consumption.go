package gen

import (
	"fmt"
	"slices"

	"pgregory.net/rapid"

	"github.com/idemcheck/idemcheck/faults/scenario"
	"github.com/idemcheck/idemcheck/impl/contract/broker"
)

// Consumption draws a consumption scenario: a world (consumer groups, nodes
// with skewed clocks, workers, retry policy, lease and retention) and a
// schedule over every fault the harness injects — duplicates, redelivery after nack
// and ack timeout, reordering, crashes at every point of the pipeline, lease
// expiry under a slow worker and takeover, transient and poison failures,
// skew and clock steps, replay, cleanup racing redelivery, concurrent
// workers on one key.
//
// The world keeps the relations a correct deployment keeps: the lease is no
// longer than the backoff and the ack timeout (a redelivery finds a crashed
// holder's lease expired), and retention exceeds the redelivery window.
func Consumption() *rapid.Generator[*scenario.Scenario] { return ConsumptionWith(Config{}) }

// ConsumptionWith is Consumption drawing its steps as c says: each kind of
// step as often as its weight, none of a kind of weight 0, and in swarm
// mode from a mix of kinds each scenario draws. The same seed and Config
// draw the same scenario. It panics on weights Weights.Validate rejects,
// as rapid's generators do on bounds that cannot be drawn from.
func ConsumptionWith(c Config) *rapid.Generator[*scenario.Scenario] {
	w := c.Weights
	if err := w.Validate(); err != nil {
		panic("gen.ConsumptionWith: weights: " + err.Error())
	}
	// A menu that fixed weights give is made once, not per scenario.
	fixed := menu(w.Of)
	return rapid.Custom(func(t *rapid.T) *scenario.Scenario {
		cons := &scenario.Consumption{Config: config(t)}
		cons.Events = events(t)
		ops, reorder := fixed, w.Of(KindReorder)
		if c.Swarm {
			ops, reorder = swarm(t, w)
		}
		cons.Steps = steps(t, cons, ops, reorder)
		return &scenario.Scenario{Version: scenario.Version, Kind: scenario.KindConsumption, Consumption: cons}
	})
}

// ConsumptionWithout is Consumption with the faults of the given ops
// switched off (weight 0): no step with one of those ops is drawn, nor any
// shape that contains one. It proves that coverage checks bite: a campaign
// without crashes never reaches a crash at any pipeline point, and its
// coverage table says so.
func ConsumptionWithout(off ...scenario.Op) *rapid.Generator[*scenario.Scenario] {
	w := Weights{}
	for _, op := range off {
		w[opKind(op)] = 0
	}
	return ConsumptionWith(Config{Weights: w})
}

// swarm draws the mix of one scenario of swarm mode: each fault kind of
// non-zero weight on or off. Off shrinks first, so a counterexample keeps
// only the kinds it needs.
func swarm(t *rapid.T, w Weights) ([]scenario.Op, int) {
	on := map[StepKind]bool{}
	for _, k := range kinds {
		on[k.kind] = !k.fault || (w.Of(k.kind) > 0 && rapid.Bool().Draw(t, "swarm_"+string(k.kind)))
	}
	weight := func(k StepKind) int {
		if !on[k] {
			return 0
		}
		return w.Of(k)
	}
	return menu(weight), weight(KindReorder)
}

const minute = int64(60_000)

// The generators and names every scenario draws with, made once: a
// campaign draws thousands of scenarios a second, and making them anew for
// each draw cost it a tenth of its time. A generator is safe to share.
var (
	intsTo      = [...]*rapid.Generator[int]{rapid.IntRange(0, 0), rapid.IntRange(0, 1), rapid.IntRange(0, 2), rapid.IntRange(0, 3), rapid.IntRange(0, 4), rapid.IntRange(0, 5), rapid.IntRange(0, 6), rapid.IntRange(0, 7), rapid.IntRange(0, 8), rapid.IntRange(0, 9)}
	oneToThree  = rapid.IntRange(1, 3)
	oneToFour   = rapid.IntRange(1, 4)
	oneToSix    = rapid.IntRange(1, 6)
	oneToNine   = rapid.IntRange(1, 9)
	twoToFive   = rapid.IntRange(2, 5)
	backoffs    = rapid.SampledFrom([]int64{200, 500, 1000})
	ackTimeouts = rapid.SampledFrom([]int64{1000, 2000, 5000})
	margins     = rapid.SampledFrom([]int64{1000, 10_000, 60_000})
	skews       = rapid.SampledFrom([]int64{0, 0, 5 * minute, -5 * minute, 30 * minute, -30 * minute})
	tenants     = rapid.SampledFrom([]string{"", "acme"})
	clockSteps  = rapid.SampledFrom([]int64{-minute, -10 * minute, minute})
	nodeLabels  = names("n%d", 3)
	skewLabels  = names("skew_%d", 3)
	eventIDs    = names("evt-%04d", 4)
	orderIDs    = names("ord-%d", 4)
	userIDs     = names("usr-%d", 2)
)

// names is format applied to 1..n.
func names(format string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf(format, i+1)
	}
	return out
}

// name is names(format, ...)[i] from table, or formatted when beyond it.
func name(table []string, format string, i int) string {
	if i < len(table) {
		return table[i]
	}
	return fmt.Sprintf(format, i+1)
}

// intTo draws from [0, n].
func intTo(n int) *rapid.Generator[int] {
	if n < len(intsTo) {
		return intsTo[n]
	}
	return rapid.IntRange(0, n)
}

func config(t *rapid.T) scenario.Config {
	consumers := []string{"ledger"}
	if intTo(3).Draw(t, "second_consumer") == 3 {
		consumers = append(consumers, "audit")
	}
	nNodes := oneToThree.Draw(t, "nodes")
	nodes := make([]scenario.Node, nNodes)
	for i := range nodes {
		nodes[i] = scenario.Node{Name: name(nodeLabels, "n%d", i), SkewMs: skew(t, name(skewLabels, "skew_%d", i))}
	}
	var workers []scenario.Worker
	for _, c := range consumers {
		n := oneToThree.Draw(t, "workers_"+c)
		for range n {
			node := nodes[intTo(nNodes-1).Draw(t, "node_of_worker")].Name
			workers = append(workers, scenario.Worker{Name: fmt.Sprintf("w%d", len(workers)+1), Consumer: c, Node: node})
		}
	}
	backoff := backoffs.Draw(t, "backoff_ms")
	ackTimeout := ackTimeouts.Draw(t, "ack_timeout_ms")
	lease := min(backoff, ackTimeout)
	maxAttempts := twoToFive.Draw(t, "max_attempts")
	maxBackoff := backoff * 4
	// The redelivery window: how long after its first delivery a message
	// may still be delivered again. Retention must exceed it.
	window := int64(maxAttempts) * (ackTimeout + maxBackoff)
	retention := window + margins.Draw(t, "retention_margin_ms")
	return scenario.Config{
		Topic: "orders", Consumers: consumers, Nodes: nodes, Workers: workers,
		Policy:  broker.Policy{MaxAttempts: maxAttempts, BackoffMs: backoff, MaxBackoffMs: maxBackoff, AckTimeoutMs: ackTimeout},
		LeaseMs: lease, RetentionMs: retention,
	}
}

// skew draws a clock offset: none, or minutes either way.
func skew(t *rapid.T, label string) int64 {
	return skews.Draw(t, label)
}

func events(t *rapid.T) []scenario.Event {
	n := oneToFour.Draw(t, "events")
	out := make([]scenario.Event, n)
	for i := range out {
		e := scenario.Event{
			ID:          eventIDs[i],
			Tenant:      tenants.Draw(t, "tenant"),
			OrderID:     orderIDs[i],
			UserID:      userIDs[i%2],
			AmountCents: int64(100 * (i + 1)),
		}
		switch intTo(9).Draw(t, "fate") {
		case 8:
			e.Fate = scenario.FateTransient
			e.Transient = oneToSix.Draw(t, "transient_runs")
		case 9:
			e.Fate = scenario.FatePoison
		}
		out[i] = e
	}
	return out
}

// The shapes: composite steps that play a fault pattern random steps
// almost never line up, drawn as one choice so that shrinking can drop or
// keep the pattern whole (the reduction pass then trims its steps).
const (
	// shapeCrashAt: a worker takes a delivery, advances 0–4 pipeline
	// steps and crashes: a crash at every pipeline point.
	shapeCrashAt scenario.Op = "shape:crash-at"
	// shapeTakeover: a worker claims and runs its handler, its lease and
	// ack timeout pass, a second worker of its group takes the redelivered
	// message over, and the slow worker takes its next step — a commit
	// (with a stale token) or, when its handler failed, a release.
	shapeTakeover scenario.Op = "shape:takeover"
	// shapeCleanupReclaim: a takeover whose new holder commits; the stream
	// is replayed, retention passes and the retention job removes the
	// record while the replayed copies are pending; the key is claimed
	// again and the slow worker, holding a token from before the cleanup,
	// takes its next step.
	shapeCleanupReclaim scenario.Op = "shape:cleanup-reclaim"
)

// shapeOps are the ops each shape plays.
var shapeOps = map[scenario.Op][]scenario.Op{
	shapeCrashAt:        {scenario.OpDeliver, scenario.OpRun, scenario.OpCrash},
	shapeTakeover:       {scenario.OpDeliver, scenario.OpRun, scenario.OpAdvance},
	shapeCleanupReclaim: {scenario.OpDeliver, scenario.OpRun, scenario.OpAdvance, scenario.OpReplay, scenario.OpCleanup},
}

// steps draws the schedule: steps from ops (a shape plays its steps), a
// delivery out of order at weight reorder against 1 in order, and every
// event produced at a drawn point.
func steps(t *rapid.T, c *scenario.Consumption, ops []scenario.Op, reorder int) []scenario.Step {
	cfg := c.Config
	workerNames := make([]string, len(cfg.Workers))
	for i, w := range cfg.Workers {
		workerNames[i] = w.Name
	}
	nodeNames := make([]string, len(cfg.Nodes))
	for i, n := range cfg.Nodes {
		nodeNames[i] = n.Name
	}
	advances := []int64{cfg.LeaseMs, cfg.AckTimeoutMs, 100, cfg.MaxBackoffMs, cfg.RetentionMs}
	eventIdx := intTo(len(c.Events) - 1)
	worker := rapid.SampledFrom(workerNames)
	node := rapid.SampledFrom(nodeNames)
	// peer draws a second worker of w's consumer group (w itself if it is
	// the group's only worker).
	peer := func(t *rapid.T, w string) string {
		var group []string
		for _, x := range cfg.Workers {
			if x.Name != w && x.Consumer == cfg.Workers[slices.Index(workerNames, w)].Consumer {
				group = append(group, x.Name)
			}
		}
		if len(group) == 0 {
			return w
		}
		return rapid.SampledFrom(group).Draw(t, "peer")
	}
	var opGen *rapid.Generator[scenario.Op]
	if len(ops) > 0 {
		opGen = rapid.SampledFrom(ops)
	}
	advanceGen := rapid.SampledFrom(advances)
	// A pick of 1..3 past the first eligible message is out of order; at
	// reorder 3 the draw is the plain 0..3.
	pickGen := intTo(reorder)
	// A drawn step is one step, or a shape's several: kept by value, a
	// single step costs no allocation of its own.
	step := rapid.Custom(func(t *rapid.T) drawnStep {
		st := scenario.Step{Op: opGen.Draw(t, "op")}
		switch st.Op {
		case scenario.OpProduce, scenario.OpProduceFail:
			st.Event = eventIdx.Draw(t, "event")
		case scenario.OpDuplicate:
			st.Event = eventIdx.Draw(t, "event")
			st.N = oneToNine.Draw(t, "copies")
		case scenario.OpDeliver:
			st.Worker = worker.Draw(t, "worker")
			if reorder > 0 {
				if p := pickGen.Draw(t, "pick"); p > 0 {
					st.Pick = 1 + (p-1)%3
				}
			}
		case scenario.OpRun, scenario.OpCrash, scenario.OpCleanup:
			st.Worker = worker.Draw(t, "worker")
		case scenario.OpAdvance:
			st.Ms = advanceGen.Draw(t, "ms")
		case scenario.OpSkew:
			st.Node = node.Draw(t, "node")
			st.Ms = skew(t, "skew")
		case scenario.OpClockStep:
			st.Node = node.Draw(t, "node")
			st.Ms = clockSteps.Draw(t, "step_ms")
		case shapeCrashAt:
			w := worker.Draw(t, "worker")
			out := []scenario.Step{{Op: scenario.OpDeliver, Worker: w}}
			for range intTo(4).Draw(t, "steps_before_crash") {
				out = append(out, scenario.Step{Op: scenario.OpRun, Worker: w})
			}
			return drawnStep{shape: append(out, scenario.Step{Op: scenario.OpCrash, Worker: w})}
		case shapeTakeover, shapeCleanupReclaim:
			slow := worker.Draw(t, "worker")
			fast := peer(t, slow)
			out := takeover(cfg, slow, fast)
			if st.Op == shapeCleanupReclaim {
				out = append(out, cleanupReclaim(cfg, slow, fast)...)
			}
			return drawnStep{shape: append(out, scenario.Step{Op: scenario.OpRun, Worker: slow})}
		}
		return drawnStep{one: st}
	})
	var drawn []drawnStep
	if opGen != nil { // every kind weighted 0: the events' produces only
		drawn = rapid.SliceOfN(step, 1, 80).Draw(t, "steps")
	}
	n := len(c.Events)
	for _, d := range drawn {
		n += max(len(d.shape), 1)
	}
	out := make([]scenario.Step, 0, n)
	for _, d := range drawn {
		if d.shape != nil {
			out = append(out, d.shape...)
		} else {
			out = append(out, d.one)
		}
	}
	// Every event is produced at least once, at a drawn point of the
	// schedule; shrinking moves these produces to the front.
	for i := range c.Events {
		at := intTo(len(out)).Draw(t, "produce_at")
		out = slices.Insert(out, at, scenario.Step{Op: scenario.OpProduce, Event: i})
	}
	return out
}

// drawnStep is one drawn step, or a shape's steps.
type drawnStep struct {
	one   scenario.Step
	shape []scenario.Step
}

// takeover: slow claims and runs its handler, its lease and ack timeout
// pass, fast is handed the redelivered message and claims it.
func takeover(cfg scenario.Config, slow, fast string) []scenario.Step {
	return []scenario.Step{
		{Op: scenario.OpDeliver, Worker: slow},
		{Op: scenario.OpRun, Worker: slow}, // claim
		{Op: scenario.OpRun, Worker: slow}, // handle
		{Op: scenario.OpAdvance, Ms: cfg.AckTimeoutMs},
		{Op: scenario.OpDeliver, Worker: fast},
		{Op: scenario.OpRun, Worker: fast}, // claim: the takeover
	}
}

// cleanupReclaim: fast handles, commits and acks; the stream is replayed;
// retention passes and the retention job removes the record while the
// replayed copies are pending; fast claims the key again.
func cleanupReclaim(cfg scenario.Config, slow, fast string) []scenario.Step {
	return []scenario.Step{
		{Op: scenario.OpRun, Worker: fast}, // handle
		{Op: scenario.OpRun, Worker: fast}, // commit
		{Op: scenario.OpRun, Worker: fast}, // ack
		{Op: scenario.OpReplay},
		{Op: scenario.OpAdvance, Ms: cfg.RetentionMs},
		{Op: scenario.OpAdvance, Ms: cfg.MaxBackoffMs},
		{Op: scenario.OpCleanup, Worker: fast},
		{Op: scenario.OpDeliver, Worker: fast},
		{Op: scenario.OpRun, Worker: fast}, // claim: the re-claim
	}
}
