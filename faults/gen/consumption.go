package gen

import (
	"fmt"
	"slices"

	"pgregory.net/rapid"

	"github.com/idemcheck/idemcheck/faults/scenario"
)

// Consumption draws a consumption scenario: a world (consumer groups, nodes
// with skewed clocks, workers, retry policy, lease and retention) and a
// schedule over every fault of SPEC.md — duplicates, redelivery after nack
// and ack timeout, reordering, crashes at every point of the pipeline, lease
// expiry under a slow worker and takeover, transient and poison failures,
// skew and clock steps, replay, cleanup racing redelivery, concurrent
// workers on one key.
//
// The world keeps the relations a correct deployment keeps: the lease is no
// longer than the backoff and the ack timeout (a redelivery finds a crashed
// holder's lease expired), and retention exceeds the redelivery window.
func Consumption() *rapid.Generator[*scenario.Scenario] {
	return rapid.Custom(func(t *rapid.T) *scenario.Scenario {
		c := &scenario.Consumption{Config: config(t)}
		c.Events = events(t)
		c.Steps = steps(t, c)
		return &scenario.Scenario{Version: scenario.Version, Kind: scenario.KindConsumption, Consumption: c}
	})
}

const minute = int64(60_000)

func config(t *rapid.T) scenario.Config {
	consumers := []string{"ledger"}
	if rapid.IntRange(0, 3).Draw(t, "second_consumer") == 3 {
		consumers = append(consumers, "audit")
	}
	nNodes := rapid.IntRange(1, 3).Draw(t, "nodes")
	nodes := make([]scenario.Node, nNodes)
	for i := range nodes {
		nodes[i] = scenario.Node{Name: fmt.Sprintf("n%d", i+1), SkewMs: skew(t, fmt.Sprintf("skew_%d", i+1))}
	}
	var workers []scenario.Worker
	for _, c := range consumers {
		n := rapid.IntRange(1, 3).Draw(t, "workers_"+c)
		for range n {
			node := nodes[rapid.IntRange(0, nNodes-1).Draw(t, "node_of_worker")].Name
			workers = append(workers, scenario.Worker{Name: fmt.Sprintf("w%d", len(workers)+1), Consumer: c, Node: node})
		}
	}
	backoff := rapid.SampledFrom([]int64{200, 500, 1000}).Draw(t, "backoff_ms")
	ackTimeout := rapid.SampledFrom([]int64{1000, 2000, 5000}).Draw(t, "ack_timeout_ms")
	lease := min(backoff, ackTimeout)
	maxAttempts := rapid.IntRange(2, 5).Draw(t, "max_attempts")
	maxBackoff := backoff * 4
	// The redelivery window: how long after its first delivery a message
	// may still be delivered again. Retention must exceed it.
	window := int64(maxAttempts) * (ackTimeout + maxBackoff)
	retention := window + rapid.SampledFrom([]int64{1000, 10_000, 60_000}).Draw(t, "retention_margin_ms")
	return scenario.Config{
		Topic: "orders", Consumers: consumers, Nodes: nodes, Workers: workers,
		MaxAttempts: maxAttempts, BackoffMs: backoff, MaxBackoffMs: maxBackoff,
		AckTimeoutMs: ackTimeout, LeaseMs: lease, RetentionMs: retention,
	}
}

// skew draws a clock offset: none, or minutes either way.
func skew(t *rapid.T, label string) int64 {
	return rapid.SampledFrom([]int64{0, 0, 5 * minute, -5 * minute, 30 * minute, -30 * minute}).Draw(t, label)
}

func events(t *rapid.T) []scenario.Event {
	n := rapid.IntRange(1, 4).Draw(t, "events")
	out := make([]scenario.Event, n)
	for i := range out {
		e := scenario.Event{
			ID:          fmt.Sprintf("evt-%04d", i+1),
			Tenant:      rapid.SampledFrom([]string{"", "acme"}).Draw(t, "tenant"),
			OrderID:     fmt.Sprintf("ord-%d", i+1),
			UserID:      fmt.Sprintf("usr-%d", i%2+1),
			AmountCents: int64(100 * (i + 1)),
		}
		switch rapid.IntRange(0, 9).Draw(t, "fate") {
		case 8:
			e.Fate = scenario.FateTransient
			e.Transient = rapid.IntRange(1, 6).Draw(t, "transient_runs")
		case 9:
			e.Fate = scenario.FatePoison
		}
		out[i] = e
	}
	return out
}

func steps(t *rapid.T, c *scenario.Consumption) []scenario.Step {
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
	eventIdx := rapid.IntRange(0, len(c.Events)-1)
	worker := rapid.SampledFrom(workerNames)
	node := rapid.SampledFrom(nodeNames)
	// Ops are listed from the most to the least useful, since rapid shrinks
	// a choice towards its first option.
	ops := []scenario.Op{
		scenario.OpStep, scenario.OpDeliver, scenario.OpProduce, scenario.OpStep, scenario.OpDeliver,
		scenario.OpAdvance, scenario.OpStep, scenario.OpCrash, scenario.OpDuplicate, scenario.OpCleanup,
		scenario.OpProduce, scenario.OpSkew, scenario.OpClockStep, scenario.OpReplay, scenario.OpProduceFail,
	}
	step := rapid.Custom(func(t *rapid.T) scenario.Step {
		st := scenario.Step{Op: rapid.SampledFrom(ops).Draw(t, "op")}
		switch st.Op {
		case scenario.OpProduce, scenario.OpProduceFail:
			st.Event = eventIdx.Draw(t, "event")
		case scenario.OpDuplicate:
			st.Event = eventIdx.Draw(t, "event")
			st.N = rapid.IntRange(1, 9).Draw(t, "copies")
		case scenario.OpDeliver:
			st.Worker = worker.Draw(t, "worker")
			st.Pick = rapid.IntRange(0, 3).Draw(t, "pick")
		case scenario.OpStep, scenario.OpCrash, scenario.OpCleanup:
			st.Worker = worker.Draw(t, "worker")
		case scenario.OpAdvance:
			st.Ms = rapid.SampledFrom(advances).Draw(t, "ms")
		case scenario.OpSkew:
			st.Node = node.Draw(t, "node")
			st.Ms = skew(t, "skew")
		case scenario.OpClockStep:
			st.Node = node.Draw(t, "node")
			st.Ms = rapid.SampledFrom([]int64{-minute, -10 * minute, minute}).Draw(t, "step_ms")
		}
		return st
	})
	out := rapid.SliceOfN(step, 1, 80).Draw(t, "steps")
	// Every event is produced at least once, at a drawn point of the
	// schedule; shrinking moves these produces to the front.
	for i := range c.Events {
		at := rapid.IntRange(0, len(out)).Draw(t, "produce_at")
		out = slices.Insert(out, at, scenario.Step{Op: scenario.OpProduce, Event: i})
	}
	return out
}
