package runner

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/faults/scenario"
	"github.com/idemcheck/idemcheck/impl/contract/clock"
	"github.com/idemcheck/idemcheck/impl/contract/hlc"
	"github.com/idemcheck/idemcheck/impl/reference/hybridclock"
	"github.com/idemcheck/idemcheck/impl/system"
)

// guarded is the reference target with a 500 ms max-offset guard.
func guarded() system.Target {
	return system.WithHLC("guarded", func(node string, wall clock.Source) (hlc.Clock, error) {
		return hybridclock.NewWithOptions(node, wall, hybridclock.Options{MaxOffset: 500 * time.Millisecond})
	})
}

// refusalStory: A runs a minute ahead of B; B receives A's OrderCreated at
// once (refused: a minute beyond the guard), true time moves on two
// minutes, and B then cancels the order.
func refusalStory(mode scenario.Refusal) *scenario.Scenario {
	return &scenario.Scenario{Version: scenario.Version, Kind: scenario.KindProjection, Projection: &scenario.Projection{
		Nodes: []scenario.Node{{Name: "A", SkewMs: 60_000}, {Name: "B"}},
		Steps: []scenario.ProjectionStep{
			{Op: scenario.OpEmit, Node: "A", ID: "e1", Order: "o1", Kind: scenario.EventOrderCreated},
			{Op: scenario.OpReceive, Node: "B", Event: "e1"},
			{Op: scenario.OpAdvance, Ms: 120_000},
			{Op: scenario.OpEmit, Node: "B", ID: "e2", Order: "o1", Kind: scenario.EventOrderCancelled},
		},
		Replicas:  []scenario.Replica{{Name: "r1", Deliveries: []string{"e2", "e1"}}},
		OnRefusal: mode,
	}}
}

// Dropped, the refused event is never known to B, so B never answers it;
// retried, B accepts it once its clock caught up and then answers.
func TestRefusedMessageIsDroppedOrRetried(t *testing.T) {
	for _, c := range []struct {
		mode    scenario.Refusal
		skipped []string
		merges  int
	}{{scenario.RefusalDrop, []string{"e2"}, 0}, {scenario.RefusalRetry, nil, 1}} {
		out, err := RunProjection(refusalStory(c.mode), guarded())
		if err != nil {
			t.Fatalf("%s: %v", c.mode, err)
		}
		res := out.Projection
		if !slices.Equal(res.Skipped, c.skipped) {
			t.Errorf("%s: skipped %v, want %v\n%s", c.mode, res.Skipped, c.skipped, out.Trace)
		}
		var refused, merged int
		for _, r := range res.Readings {
			switch {
			case r.Refused:
				refused++
			case r.Op == OpMerge:
				merged++
			}
		}
		if refused != 1 || merged != c.merges {
			t.Errorf("%s: %d refusal(s) and %d merge(s), want 1 and %d\n%s", c.mode, refused, merged, c.merges, out.Trace)
		}
		if d := res.Declarations["B"]; d.MaxOffset != 500*time.Millisecond {
			t.Errorf("%s: B declared %+v", c.mode, d)
		}
		if !strings.Contains(out.Trace.String(), "REFUSES") {
			t.Errorf("%s: the trace does not show the refusal:\n%s", c.mode, out.Trace)
		}
	}
}

// A constructor that fails fails the run with its error, naming the node.
func TestFailingHLCConstructorFailsTheRun(t *testing.T) {
	bad := system.WithHLC("bad", func(node string, wall clock.Source) (hlc.Clock, error) {
		return hybridclock.NewWithOptions(node, wall, hybridclock.Options{MaxOffset: -1})
	})
	_, err := RunProjection(refusalStory(""), bad)
	if err == nil || !strings.Contains(err.Error(), "negative") || !strings.Contains(err.Error(), "node A") {
		t.Fatalf("error %v, want the negative max offset named for node A", err)
	}
}
