package explore

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/idemcheck/idemcheck/faults/scenario"
	"github.com/idemcheck/idemcheck/impl/contract/broker"
)

// World is the small world an exploration enumerates the schedules of.
type World struct {
	// Events are the events' fates, one per event: "ok", "transient:N"
	// (the first N handler runs fail) or "poison".
	Events []string `json:"events"`
	// Groups is the number of consumer groups.
	Groups int `json:"groups"`
	// WorkersPerGroup is the number of workers in each group.
	WorkersPerGroup int `json:"workersPerGroup"`
	// Nodes is the number of nodes; workers are spread over them in turn.
	Nodes int `json:"nodes"`
	// Retry policy, lease and retention (zero: the defaults below).
	broker.Policy
	LeaseMs     int64 `json:"leaseMs,omitempty"`
	RetentionMs int64 `json:"retentionMs,omitempty"`
}

// The world's defaults: a short retry policy, so that a message reaches
// max_attempts and the DLQ within a few steps.
const (
	DefaultMaxAttempts  = 2
	DefaultBackoffMs    = 100
	DefaultAckTimeoutMs = 1000
	DefaultLeaseMs      = 1000
	DefaultRetentionMs  = 10_000
)

// withDefaults fills the zero fields.
func (w World) withDefaults() World {
	if w.Nodes == 0 {
		w.Nodes = 1
	}
	if w.MaxAttempts == 0 {
		w.MaxAttempts = DefaultMaxAttempts
	}
	if w.BackoffMs == 0 {
		w.BackoffMs = DefaultBackoffMs
	}
	if w.MaxBackoffMs == 0 {
		w.MaxBackoffMs = max(w.BackoffMs, 4*DefaultBackoffMs)
	}
	if w.AckTimeoutMs == 0 {
		w.AckTimeoutMs = DefaultAckTimeoutMs
	}
	if w.LeaseMs == 0 {
		w.LeaseMs = DefaultLeaseMs
	}
	if w.RetentionMs == 0 {
		w.RetentionMs = DefaultRetentionMs
	}
	return w
}

// Validate reports what is wrong with the world, naming it.
func (w World) Validate() error {
	switch {
	case len(w.Events) == 0:
		return fmt.Errorf("world: no events")
	case w.Groups < 1:
		return fmt.Errorf("world: %d consumer groups; need at least one", w.Groups)
	case w.WorkersPerGroup < 1:
		return fmt.Errorf("world: no workers (%d per group); need at least one", w.WorkersPerGroup)
	case w.Nodes < 0:
		return fmt.Errorf("world: %d nodes", w.Nodes)
	}
	for _, f := range w.Events {
		if _, _, err := ParseFate(f); err != nil {
			return err
		}
	}
	return nil
}

// ParseFate reads an event's fate: "ok", "transient:N" or "poison".
func ParseFate(s string) (scenario.Fate, int, error) {
	switch {
	case s == "ok":
		return scenario.FateOK, 0, nil
	case s == "poison":
		return scenario.FatePoison, 0, nil
	case s == "transient":
		return scenario.FateTransient, 1, nil
	case strings.HasPrefix(s, "transient:"):
		n, err := strconv.Atoi(strings.TrimPrefix(s, "transient:"))
		if err != nil || n < 1 {
			return "", 0, fmt.Errorf("event fate %q: transient:N needs N >= 1", s)
		}
		return scenario.FateTransient, n, nil
	}
	return "", 0, fmt.Errorf("event fate %q is not ok, transient:N or poison", s)
}

// Scenario is the world as a consumption scenario with an empty schedule.
// Events alike but for their id share their order, user and amount, so
// that the symmetry reduction may fold them together.
func (w World) Scenario() (*scenario.Consumption, error) {
	if err := w.Validate(); err != nil {
		return nil, err
	}
	w = w.withDefaults()
	c := &scenario.Consumption{Config: scenario.Config{
		Topic: "orders", Policy: w.Policy, LeaseMs: w.LeaseMs, RetentionMs: w.RetentionMs,
	}}
	for n := range w.Nodes {
		c.Config.Nodes = append(c.Config.Nodes, scenario.Node{Name: fmt.Sprintf("n%d", n+1)})
	}
	k := 0
	for g := range w.Groups {
		group := fmt.Sprintf("g%d", g+1)
		c.Config.Consumers = append(c.Config.Consumers, group)
		for i := range w.WorkersPerGroup {
			c.Config.Workers = append(c.Config.Workers, scenario.Worker{
				Name: fmt.Sprintf("w%d", k+1), Consumer: group, Node: c.Config.Nodes[(g*w.WorkersPerGroup+i)%w.Nodes].Name,
			})
			k++
		}
	}
	for i, f := range w.Events {
		fate, n, _ := ParseFate(f)
		c.Events = append(c.Events, scenario.Event{
			ID: fmt.Sprintf("e%d", i+1), OrderID: "o-" + f, UserID: "u1", AmountCents: 100, Fate: fate, Transient: n,
		})
	}
	return c, nil
}
