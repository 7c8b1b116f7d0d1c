package properties_test

import (
	"slices"
	"testing"

	"github.com/idemcheck/idemcheck/faults/scenario"
	"github.com/idemcheck/idemcheck/impl/contract/clock"
	"github.com/idemcheck/idemcheck/impl/contract/hlc"
	"github.com/idemcheck/idemcheck/impl/system"
	"github.com/idemcheck/idemcheck/properties"
)

// truncatingHLC is an HLC as a library might write it to pack its wall into
// fewer bits: it drops the low 10 bits of the physical clock, and starts
// its counter afresh whenever the physical clock moves on. Its stamps lag
// the physical clock (physical-bound) and, when the clock moves on within
// one truncated value, go backwards (monotonic): two laws from one bug.
type truncatingHLC struct {
	node string
	wall clock.Source
	last hlc.Timestamp
	phys int64
}

const lowBits = 1<<10 - 1

func (c *truncatingHLC) stamp(remote *hlc.Timestamp) hlc.Timestamp {
	pt := c.wall.NowMs()
	wall := pt &^ lowBits
	if remote != nil && remote.WallMs > wall {
		wall = remote.WallMs
	}
	switch {
	case pt > c.phys && wall >= c.last.WallMs:
		c.last = hlc.Timestamp{WallMs: wall, Node: c.node} // the bug: the counter restarts
	default:
		c.last = hlc.Timestamp{WallMs: max(wall, c.last.WallMs), Logical: c.last.Logical + 1, Node: c.node}
	}
	if remote != nil && !remote.Less(c.last) {
		c.last = hlc.Timestamp{WallMs: remote.WallMs, Logical: remote.Logical + 1, Node: c.node}
	}
	c.phys = max(c.phys, pt)
	return c.last
}

func (c *truncatingHLC) Tick() hlc.Timestamp                          { return c.stamp(nil) }
func (c *truncatingHLC) Merge(r hlc.Timestamp) (hlc.Timestamp, error) { return c.stamp(&r), nil }

// TestEveryBrokenLawIsReported: a property made of several laws does not
// stop at the first one broken. HuntEach, the engine of a campaign, finds
// both laws the truncating HLC breaks, each with its own counterexample
// that breaks that law.
func TestEveryBrokenLawIsReported(t *testing.T) {
	target := system.Reference()
	parts := *target.Projection
	parts.NewHLC = func(node string, wall clock.Source) hlc.Clock { return &truncatingHLC{node: node, wall: wall} }
	target.Projection, target.Name = &parts, "truncating-hlc"
	p, _ := properties.ByName("hlc-laws")
	results := properties.HuntEach(target, properties.HuntOptions{Kind: scenario.KindProjection, Properties: []properties.Property{p}, Checks: 500, Seed: 7})
	var laws []string
	for _, r := range results {
		laws = append(laws, r.Law)
		if r.Verdict.Law == "" || properties.ID(r.Verdict.Property, r.Verdict.Law) != r.Law || r.Scenario == nil {
			t.Errorf("result for %s: verdict %+v", r.Law, r.Verdict)
		}
		if !properties.StillFails(target, []properties.Property{p}, r.Law)(r.Scenario) {
			t.Errorf("the counterexample of %s does not break it", r.Law)
		}
		t.Logf("%s broken after %d checks, counterexample of size %d", r.Law, r.Checks, r.Scenario.Size())
	}
	for _, want := range []string{"hlc-laws/physical-bound", "hlc-laws/monotonic"} {
		if !slices.Contains(laws, want) {
			t.Errorf("laws reported %v: %s is missing", laws, want)
		}
	}
}
