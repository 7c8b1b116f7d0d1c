package scenario

import (
	"fmt"

	"github.com/idemcheck/idemcheck/impl/contract/broker"
)

// Consumption is a scenario over the at-least-once pipeline: producer gate,
// broker, claim store, unit of work, ledger and consumer workers.
type Consumption struct {
	Config Config  `json:"config"`
	Events []Event `json:"events"`
	Steps  []Step  `json:"steps"`
}

// Config fixes the world a consumption scenario runs in.
type Config struct {
	// Topic the events are produced to; the DLQ is "dlq.<Topic>".
	Topic string `json:"topic"`
	// Consumers are the consumer groups; each receives every message and has
	// its own dedupe scope and its own ledger.
	Consumers []string `json:"consumers"`
	// Nodes are the machines, each with its own wall clock.
	Nodes []Node `json:"nodes"`
	// Workers run the consumer pipeline, each on a node, in a consumer group.
	Workers []Worker `json:"workers"`

	// Policy is the retry policy; its fields are encoded at this level.
	broker.Policy
	LeaseMs     int64 `json:"leaseMs"`
	RetentionMs int64 `json:"retentionMs"`
}

// Node is a machine with a wall clock skewed from true time.
type Node struct {
	Name   string `json:"name"`
	SkewMs int64  `json:"skewMs"`
}

// Worker is one consumer process.
type Worker struct {
	Name     string `json:"name"`
	Consumer string `json:"consumer"`
	Node     string `json:"node"`
}

// Event is an OrderPaid event and the fate its handler meets.
type Event struct {
	ID          string `json:"id"`
	Tenant      string `json:"tenant"`
	OrderID     string `json:"orderId"`
	UserID      string `json:"userId"`
	AmountCents int64  `json:"amountCents"`
	// Fate is what the handler does with this event: see the Fate constants.
	Fate Fate `json:"fate,omitempty"`
	// Transient is, for FateTransient, how many handler runs fail before one
	// succeeds (counted over all consumers and copies). A count of
	// MaxAttempts or more means every delivery of a message fails.
	Transient int `json:"transient,omitempty"`
}

// Fate of an event's handler runs.
type Fate string

const (
	// FateOK: the handler succeeds.
	FateOK Fate = ""
	// FateTransient: the first Transient runs fail transiently, then it succeeds.
	FateTransient Fate = "transient"
	// FatePoison: every run fails with a non-retryable error.
	FatePoison Fate = "poison"
)

// Op names a schedule step.
type Op string

// The schedule's vocabulary. Each step names the fields it reads.
const (
	// OpProduce: the producer publishes Event through the idempotency gate
	// (a repeat of a committed event is the producer retrying).
	OpProduce Op = "produce"
	// OpProduceFail: a produce of Event fails after the gate marked it
	// pending; the gate records FAILED and nothing is enqueued.
	OpProduceFail Op = "produce-fail"
	// OpDuplicate: the broker enqueues N extra copies of Event's message (N
	// is clamped to 1..9, so a message exists 2–10 times).
	OpDuplicate Op = "duplicate"
	// OpDeliver: the broker hands Worker the Pick-th eligible message of its
	// consumer group (modulo their number): reordering within and across keys.
	OpDeliver Op = "deliver"
	// OpRun: Worker runs to its next scheduling point: its pipeline
	// advances by one step. Stored scenarios may spell it "step", its old
	// name (Canonical).
	OpRun Op = "run"
	// OpStep is OpRun's old name.
	//
	// Deprecated: use OpRun; the op is written "run" and "step" is only read.
	OpStep = OpRun
	// OpCrash: Worker crashes where it stands; its delivery and open unit of
	// work are lost, and it restarts idle.
	OpCrash Op = "crash"
	// OpAdvance: true time moves forward by Ms (leases and ack timeouts expire).
	OpAdvance Op = "advance"
	// OpSkew: Node's wall clock is set Ms away from true time.
	OpSkew Op = "skew"
	// OpClockStep: Node's wall clock jumps by Ms (negative: backwards).
	OpClockStep Op = "clock-step"
	// OpCleanup: the retention job runs on Worker's node.
	OpCleanup Op = "cleanup"
	// OpReplay: the whole stream is delivered again to every consumer group.
	OpReplay Op = "replay"
	// OpFail: the call Worker is parked at fails transiently, as a lost
	// connection does. Only a team's consumer plays it (WorldConsumer): the
	// reference world's faults are crashes and produce failures.
	OpFail Op = "fail"
	// OpRebalance: the consumer group moves partition Pick of a log
	// broker to Worker. Only a team's consumer of a log plays it
	// (WorldConsumer); on a queue it does nothing.
	OpRebalance Op = "rebalance"
)

// Step is one scheduled action. Only the fields its Op names are read.
type Step struct {
	Op     Op     `json:"op"`
	Worker string `json:"worker,omitempty"`
	Node   string `json:"node,omitempty"`
	Event  int    `json:"event,omitempty"`
	Pick   int    `json:"pick,omitempty"`
	N      int    `json:"n,omitempty"`
	Ms     int64  `json:"ms,omitempty"`
}

func (c *Consumption) validate() error {
	cfg := c.Config
	if cfg.Topic == "" {
		return fmt.Errorf("consumption.config.topic: empty")
	}
	if len(cfg.Consumers) == 0 {
		return fmt.Errorf("consumption.config.consumers: need at least one")
	}
	consumers := map[string]bool{}
	for i, name := range cfg.Consumers {
		if name == "" || consumers[name] {
			return fmt.Errorf("consumption.config.consumers[%d]: %q is empty or repeated", i, name)
		}
		consumers[name] = true
	}
	nodes := map[string]bool{}
	for i, n := range cfg.Nodes {
		if n.Name == "" || nodes[n.Name] {
			return fmt.Errorf("consumption.config.nodes[%d].name: %q is empty or repeated", i, n.Name)
		}
		nodes[n.Name] = true
	}
	if len(cfg.Workers) == 0 {
		return fmt.Errorf("consumption.config.workers: need at least one")
	}
	workers := map[string]bool{}
	for i, w := range cfg.Workers {
		switch {
		case w.Name == "" || workers[w.Name]:
			return fmt.Errorf("consumption.config.workers[%d].name: %q is empty or repeated", i, w.Name)
		case !consumers[w.Consumer]:
			return fmt.Errorf("consumption.config.workers[%d].consumer: %q is not a listed consumer", i, w.Consumer)
		case !nodes[w.Node]:
			return fmt.Errorf("consumption.config.workers[%d].node: %q is not a listed node", i, w.Node)
		}
		workers[w.Name] = true
	}
	for name := range consumers {
		found := false
		for _, w := range cfg.Workers {
			found = found || w.Consumer == name
		}
		if !found {
			return fmt.Errorf("consumption.config.consumers: %q has no worker", name)
		}
	}
	positive := []struct {
		name string
		v    int64
	}{
		{"maxAttempts", int64(cfg.MaxAttempts)}, {"backoffMs", cfg.BackoffMs}, {"maxBackoffMs", cfg.MaxBackoffMs},
		{"ackTimeoutMs", cfg.AckTimeoutMs}, {"leaseMs", cfg.LeaseMs}, {"retentionMs", cfg.RetentionMs},
	}
	for _, p := range positive {
		if p.v <= 0 {
			return fmt.Errorf("consumption.config.%s: must be positive, got %d", p.name, p.v)
		}
	}
	if cfg.MaxBackoffMs < cfg.BackoffMs {
		return fmt.Errorf("consumption.config.maxBackoffMs: %d is below backoffMs %d", cfg.MaxBackoffMs, cfg.BackoffMs)
	}
	ids := map[string]bool{}
	for i, e := range c.Events {
		switch {
		case e.ID == "" || ids[e.ID]:
			return fmt.Errorf("consumption.events[%d].id: %q is empty or repeated", i, e.ID)
		case e.Fate != FateOK && e.Fate != FateTransient && e.Fate != FatePoison:
			return fmt.Errorf("consumption.events[%d].fate: %q is not one of \"\", %q, %q", i, e.Fate, FateTransient, FatePoison)
		case e.Transient < 0 || (e.Fate != FateTransient && e.Transient != 0):
			return fmt.Errorf("consumption.events[%d].transient: %d needs fate %q and must not be negative", i, e.Transient, FateTransient)
		}
		ids[e.ID] = true
	}
	for i, st := range c.Steps {
		if err := c.validateStep(st, workers, nodes); err != nil {
			return fmt.Errorf("consumption.steps[%d]: %w", i, err)
		}
	}
	return nil
}

func (c *Consumption) validateStep(st Step, workers, nodes map[string]bool) error {
	needEvent := func() error {
		if st.Event < 0 || st.Event >= len(c.Events) {
			return fmt.Errorf("event: %d is out of range (%d events)", st.Event, len(c.Events))
		}
		return nil
	}
	needWorker := func() error {
		if !workers[st.Worker] {
			return fmt.Errorf("worker: %q is not a listed worker", st.Worker)
		}
		return nil
	}
	needNode := func() error {
		if !nodes[st.Node] {
			return fmt.Errorf("node: %q is not a listed node", st.Node)
		}
		return nil
	}
	switch st.Op {
	case OpProduce, OpProduceFail:
		return needEvent()
	case OpDuplicate:
		if err := needEvent(); err != nil {
			return err
		}
		if st.N < 1 || st.N > 9 {
			return fmt.Errorf("n: %d copies is outside 1..9", st.N)
		}
	case OpDeliver:
		if st.Pick < 0 {
			return fmt.Errorf("pick: %d is negative", st.Pick)
		}
		return needWorker()
	case OpRun, OpCrash, OpCleanup:
		return needWorker()
	case OpAdvance:
		if st.Ms < 0 {
			return fmt.Errorf("ms: %d is negative; true time only moves forward", st.Ms)
		}
	case OpSkew, OpClockStep:
		return needNode()
	case OpReplay:
	default:
		return fmt.Errorf("op: %q is not a known step", st.Op)
	}
	return nil
}
