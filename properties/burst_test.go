package properties_test

import (
	"strings"
	"testing"

	"github.com/idemcheck/idemcheck/faults/scenario"
	"github.com/idemcheck/idemcheck/impl/contract/clock"
	"github.com/idemcheck/idemcheck/impl/contract/hlc"
	"github.com/idemcheck/idemcheck/impl/system"
	"github.com/idemcheck/idemcheck/properties"
)

// A counter that wraps in a burst is reported once per law, at the tick
// where the order broke, with the stamps around it; the reduction cuts the
// burst to the fewest ticks that still wrap.
func TestBurstWrapIsReportedAtItsTick(t *testing.T) {
	m, ok := system.Lookup("hlc-packed-counter-wraps")
	if !ok {
		t.Fatal("mutant hlc-packed-counter-wraps is not registered")
	}
	p, _ := properties.ByName("hlc-laws")
	res := properties.Hunt(m, properties.HuntOptions{Kind: scenario.KindProjection, Properties: []properties.Property{p}, Checks: 2000, Seed: 1})
	if !res.Failed || res.Law != "hlc-laws/monotonic" {
		t.Fatalf("not caught by monotonic: failed=%v law=%q", res.Failed, res.Law)
	}
	var burst *scenario.ProjectionStep
	for i, st := range res.Scenario.Projection.Steps {
		if st.Op == scenario.OpBurst && st.Count > 4 {
			burst = &res.Scenario.Projection.Steps[i]
		}
	}
	if burst == nil || burst.Count != 1<<16+1 {
		t.Fatalf("counterexample %+v: want its burst cut to 65537 ticks, the first that wraps", res.Scenario.Projection.Steps)
	}
	var lines []string
	for _, d := range res.Verdict.Breaches[0].Details {
		if !strings.HasPrefix(d, "diff:") {
			lines = append(lines, d)
		}
	}
	if len(lines) != 1 {
		t.Fatalf("monotonic has %d lines, want one for the burst:\n%s", len(lines), strings.Join(lines, "\n"))
	}
	for _, want := range []string{"tick 65537 of a burst of 65537", "1 tick(s) in all", "tick 65536 ", "[tick 65537 "} {
		if !strings.Contains(lines[0], want) {
			t.Errorf("the line does not say %q: %s", want, lines[0])
		}
	}
	report := properties.Report(res.Verdict, res.Outcome, properties.ReportOptions{})
	if !strings.Contains(report, "(ticks 1-65536), then ") || !strings.Contains(report, "(tick 65537) <- NOT LATER than") {
		t.Errorf("the trace does not show where the burst went backwards:\n%s", report)
	}
}

// wraps16 is a millisecond HLC written the lazy way: its logical counter is
// 16 bits and wraps.
type wraps16 struct {
	node string
	wall clock.Source
	last hlc.Timestamp
}

func (c *wraps16) Tick() hlc.Timestamp {
	if now := c.wall.NowMs(); now > c.last.WallMs {
		c.last = hlc.Timestamp{WallMs: now, Node: c.node}
	} else {
		c.last.Logical = uint32(uint16(c.last.Logical + 1))
	}
	return c.last
}

func (c *wraps16) Merge(remote hlc.Timestamp) (hlc.Timestamp, error) {
	if remote.WallMs > c.last.WallMs || (remote.WallMs == c.last.WallMs && remote.Logical > c.last.Logical) {
		c.last.WallMs, c.last.Logical = remote.WallMs, remote.Logical
	}
	return c.Tick(), nil
}

// For a millisecond clock the report also shows what the canonical clock
// answers at the tick that broke the order.
func TestBurstWrapShowsTheCanonicalAnswerAtItsTick(t *testing.T) {
	target := system.WithHLC("wraps16", func(node string, wall clock.Source) (hlc.Clock, error) { return &wraps16{node: node, wall: wall}, nil })
	p, _ := properties.ByName("hlc-laws")
	res := properties.Hunt(target, properties.HuntOptions{Kind: scenario.KindProjection, Properties: []properties.Property{p}, Laws: []string{"hlc-laws/monotonic"}, Checks: 2000, Seed: 1})
	if !res.Failed || res.Law != "hlc-laws/monotonic" {
		t.Fatalf("not caught by monotonic: failed=%v law=%q", res.Failed, res.Law)
	}
	b := res.Verdict.Breaches[0]
	if !strings.Contains(strings.Join(b.Details, "\n"), "tick 65537 of the burst") || !strings.Contains(b.Diff, "Logical") {
		t.Fatalf("no canonical answer at the burst's tick:\n%s\n%s", strings.Join(b.Details, "\n"), b.Diff)
	}
}

// Reduce bisects a burst's count: about 17 plays for 65,536 ticks, not
// one per tick.
func TestReduceBisectsABurst(t *testing.T) {
	s := &scenario.Scenario{Version: scenario.Version, Kind: scenario.KindProjection, Projection: &scenario.Projection{
		Nodes:    []scenario.Node{{Name: "A"}},
		Steps:    []scenario.ProjectionStep{{Op: scenario.OpBurst, Node: "A", Count: 1<<16 + 3}},
		Replicas: []scenario.Replica{{Name: "r1"}},
	}}
	plays := 0
	got := properties.Reduce(s, func(c *scenario.Scenario) bool {
		plays++
		for _, st := range c.Projection.Steps {
			if st.Op == scenario.OpBurst && st.Count >= 40_000 {
				return true
			}
		}
		return false
	})
	if n := got.Projection.Steps[0].Count; n != 40_000 {
		t.Fatalf("burst reduced to %d ticks, want 40000", n)
	}
	if plays > 40 {
		t.Fatalf("%d plays to reduce one burst, want about 17 (and a few for the other candidates)", plays)
	}
}

// A failure drawn with a big burst is not shrunk by rapid (each of its tries
// would play the burst): the reduction pass alone cuts it, and its seed
// still reproduces it as the first check of a hunt.
func TestBurstFailureSkipsRapidsShrinkButKeepsItsSeed(t *testing.T) {
	m, _ := system.Lookup("hlc-packed-counter-wraps")
	p, _ := properties.ByName("hlc-laws")
	opts := properties.HuntOptions{Kind: scenario.KindProjection, Properties: []properties.Property{p}, Checks: 2000, Seed: 7, NoReduce: true}
	res := properties.Hunt(m, opts)
	if !res.Failed || res.Law != "hlc-laws/monotonic" || res.Checks < 2 {
		t.Fatalf("not caught by monotonic after a few checks: failed=%v law=%q checks=%d", res.Failed, res.Law, res.Checks)
	}
	if res.ShrunkSize != res.Scenario.Size() || res.Scenario.Size() < 3 {
		t.Fatalf("size %d, shrunk size %d: the scenario was shrunk, or drawn suspiciously small", res.Scenario.Size(), res.ShrunkSize)
	}
	opts.Seed, opts.Checks = res.Seed, 1
	again := properties.Hunt(m, opts)
	a, _ := scenario.Marshal(res.Scenario)
	b, _ := scenario.Marshal(again.Scenario)
	if !again.Failed || again.Checks != 1 || string(a) != string(b) {
		t.Fatalf("seed %d does not reproduce the failure as the first check: failed=%v checks=%d\n%s\n%s", res.Seed, again.Failed, again.Checks, a, b)
	}
}

// signExtends is a millisecond HLC written with a 16-bit signed counter:
// past 32,767 events in one millisecond the counter turns negative and,
// folded back into the stamp, takes the wall a millisecond back.
type signExtends struct {
	node    string
	wall    clock.Source
	wallMs  int64
	counter int16
}

func (c *signExtends) Tick() hlc.Timestamp {
	if now := c.wall.NowMs(); now > c.wallMs {
		c.wallMs, c.counter = now, 0
	} else {
		c.counter++
	}
	if c.counter < 0 {
		return hlc.Timestamp{WallMs: c.wallMs - 1, Logical: uint32(int32(c.counter) + 1<<15), Node: c.node}
	}
	return hlc.Timestamp{WallMs: c.wallMs, Logical: uint32(c.counter), Node: c.node}
}

func (c *signExtends) Merge(hlc.Timestamp) (hlc.Timestamp, error) { return c.Tick(), nil }

// A clock that stamps half a burst behind its physical clock is reported in
// one physical-bound line that counts the ticks, not one line per tick.
func TestBurstPhysicalBoundIsOneLineWithACount(t *testing.T) {
	target := system.WithHLC("sign-extends", func(node string, wall clock.Source) (hlc.Clock, error) {
		return &signExtends{node: node, wall: wall}, nil
	})
	p, _ := properties.ByName("hlc-laws")
	res := properties.Hunt(target, properties.HuntOptions{Kind: scenario.KindProjection, Properties: []properties.Property{p},
		Laws: []string{"hlc-laws/physical-bound"}, Checks: 3000, Seed: 1})
	if !res.Failed || res.Law != "hlc-laws/physical-bound" {
		t.Fatalf("not caught by physical-bound: failed=%v law=%q", res.Failed, res.Law)
	}
	var lines []string
	for _, d := range res.Verdict.Breaches[0].Details {
		if !strings.HasPrefix(d, "diff:") {
			lines = append(lines, d)
		}
	}
	if len(lines) != 1 || !strings.Contains(lines[0], "tick 32769 of a burst") || !strings.Contains(lines[0], "tick(s) in all") {
		t.Fatalf("physical-bound says, in %d line(s):\n%s", len(lines), strings.Join(lines, "\n"))
	}
}
