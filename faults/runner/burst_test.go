package runner

import (
	"strings"
	"testing"

	"github.com/idemcheck/idemcheck/faults/scenario"
	"github.com/idemcheck/idemcheck/impl/contract/clock"
	"github.com/idemcheck/idemcheck/impl/contract/hlc"
	"github.com/idemcheck/idemcheck/impl/system"
)

func burstScenario(counts ...int) *scenario.Scenario {
	p := &scenario.Projection{Nodes: []scenario.Node{{Name: "A"}}, Replicas: []scenario.Replica{{Name: "r1"}}}
	for _, n := range counts {
		p.Steps = append(p.Steps, scenario.ProjectionStep{Op: scenario.OpBurst, Node: "A", Count: n})
	}
	return &scenario.Scenario{Version: scenario.Version, Kind: scenario.KindProjection, Projection: p}
}

// A burst is one reading within one instant: the reference's 5 ticks count
// up in one run, and the next burst continues from the last.
func TestBurstIsOneReadingOfRuns(t *testing.T) {
	out, err := RunProjection(burstScenario(5, 3), system.Reference())
	if err != nil {
		t.Fatal(err)
	}
	rs := out.Projection.Readings
	if len(rs) != 2 || rs[0].Op != OpBurst || len(rs[0].Ticks) != 1 || rs[0].Ticks[0].Count != 5 || rs[0].Got.Logical != 4 {
		t.Fatalf("burst readings %+v, want one reading of one run of 5 ticks", rs)
	}
	if r := rs[1]; !r.HasPrev || r.Prev != rs[0].Got || r.Ticks[0].First.Logical != 5 || r.Got.Logical != 7 || r.PhysMs != rs[0].PhysMs {
		t.Fatalf("second burst %+v, want it to continue from %s", r, rs[0].Got)
	}
}

// wrapping is a clock whose logical counter wraps at 4 within one wall value.
type wrapping struct {
	node string
	wall clock.Source
	last hlc.Timestamp
}

func (c *wrapping) Tick() hlc.Timestamp {
	if now := c.wall.NowMs(); now > c.last.WallMs {
		c.last = hlc.Timestamp{WallMs: now, Node: c.node}
	} else {
		c.last.Logical = (c.last.Logical + 1) % 4
	}
	return c.last
}

func (c *wrapping) Merge(r hlc.Timestamp) (hlc.Timestamp, error) { return c.Tick(), nil }

// The trace line of a burst shows each run of stamps with its ticks, and
// the tick where the stamps stopped going up.
func TestBurstTraceShowsWhereItWentBackwards(t *testing.T) {
	target := system.WithHLC("wraps", func(node string, wall clock.Source) (hlc.Clock, error) {
		return &wrapping{node: node, wall: wall}, nil
	})
	out, err := RunProjection(burstScenario(6), target)
	if err != nil {
		t.Fatal(err)
	}
	r := out.Projection.Readings[0]
	if len(r.Ticks) != 2 || r.Ticks[0].Count != 4 || r.Ticks[1].Count != 2 {
		t.Fatalf("runs %+v, want 4 ticks then 2", r.Ticks)
	}
	var line string
	for _, l := range out.Trace.Lines() {
		if strings.Contains(l, "burst") {
			line = l
		}
	}
	for _, want := range []string{"ticks 1-4", "ticks 5-6", "NOT LATER than 1700000000000.3@A at tick 5"} {
		if !strings.Contains(line, want) {
			t.Errorf("trace line %q does not say %q", line, want)
		}
	}
}

// A clock whose stamps break into many runs is shown by its first runs and
// each place it went backwards, not by all of them.
func TestDescribeRunsCapsTheLine(t *testing.T) {
	var runs []StampRun
	for k := range 40 {
		wall := int64(100 + k)
		if k == 30 {
			wall = 50 // backwards
		}
		runs = appendStamp(runs, hlc.Timestamp{WallMs: wall, Node: "A"})
	}
	got := describeRuns(hlc.Timestamp{}, false, runs)
	if len(runs) != 40 || !strings.Contains(got, "50.0@A (tick 31) <- NOT LATER than 129.0@A at tick 31") || !strings.Contains(got, "more run(s)") || strings.Count(got, "(tick ") > burstRunsShown {
		t.Fatalf("description %q", got)
	}
}

// BenchmarkBurst is a burst of 65,537 ticks, of the reference clock and of
// a packed clock through the packed-stamp adapter (whose counter wraps): what
// a big burst costs a projection check.
//
//	go test -run='^$' -bench=Burst ./faults/runner
func BenchmarkBurst(b *testing.B) {
	wraps, _ := system.Lookup("hlc-packed-counter-wraps")
	for _, target := range []system.Target{system.Reference(), wraps} {
		b.Run(target.Name, func(b *testing.B) {
			s := burstScenario(1<<16 + 1)
			for b.Loop() {
				if _, err := RunProjection(s, target); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/(1<<16+1), "ns/tick")
		})
	}
}
