package hybridclock

import (
	"math"
	"testing"

	"github.com/idemcheck/idemcheck/impl/contract/clock"
	"github.com/idemcheck/idemcheck/impl/contract/hlc"
	"github.com/idemcheck/idemcheck/internal/hunt"
	"pgregory.net/rapid"
)

const start = 1_700_000_000_000

func TestCompareIsWallThenLogicalThenNode(t *testing.T) {
	ordered := []Timestamp{
		{WallMs: 1, Logical: 9, Node: "Z"},
		{WallMs: 2, Logical: 0, Node: "Z"},
		{WallMs: 2, Logical: 1, Node: "A"},
		{WallMs: 2, Logical: 1, Node: "B"},
	}
	for i := range ordered {
		for j := range ordered {
			want := 0
			switch {
			case i < j:
				want = -1
			case i > j:
				want = 1
			}
			if got := ordered[i].Compare(ordered[j]); got != want {
				t.Errorf("%s.Compare(%s) = %d; want %d", ordered[i], ordered[j], got, want)
			}
			if ordered[i].Less(ordered[j]) != (want < 0) {
				t.Errorf("%s.Less(%s) disagrees with Compare", ordered[i], ordered[j])
			}
		}
	}
}

func TestTickFollowsPhysicalTimeAndCountsWhenItStands(t *testing.T) {
	truth := clock.NewVirtual(start)
	c := New("A", clock.NewNode("A", truth, 0))
	if got := c.Tick(); got != (Timestamp{WallMs: start, Node: "A"}) {
		t.Fatalf("first tick = %s", got)
	}
	if got := c.Tick(); got != (Timestamp{WallMs: start, Logical: 1, Node: "A"}) {
		t.Fatalf("tick with the clock standing = %s; want the logical counter to move", got)
	}
	truth.Advance(5)
	if got := c.Tick(); got != (Timestamp{WallMs: start + 5, Node: "A"}) {
		t.Fatalf("tick after time moved = %s; want the physical time and logical 0", got)
	}
}

func TestNeverBackwardsAcrossAClockStep(t *testing.T) {
	truth := clock.NewVirtual(start)
	wall := clock.NewNode("A", truth, 0)
	c := New("A", wall)
	before := c.Tick()
	wall.Step(-120_000) // an NTP step two minutes back
	truth.Advance(10)
	got := c.Tick()
	if !before.Less(got) {
		t.Fatalf("after a step back the HLC went from %s to %s", before, got)
	}
	if got.WallMs != before.WallMs || got.Logical != 1 {
		t.Fatalf("after a step back got %s; want the old wall kept and the logical counter moved", got)
	}
	// Once physical time overtakes the old wall, the HLC follows it again.
	truth.Advance(130_000)
	if got := c.Tick(); got.WallMs != wall.NowMs() || got.Logical != 0 {
		t.Fatalf("after physical time caught up got %s; want wall %d", got, wall.NowMs())
	}
}

func TestMergeIsLaterThanBothInputsAndCarriesCausality(t *testing.T) {
	truth := clock.NewVirtual(start)
	a := New("A", clock.NewNode("A", truth, +180_000)) // three minutes ahead
	b := New("B", clock.NewNode("B", truth, -180_000)) // three minutes behind
	local := b.Tick()
	sent := a.Tick()
	truth.Advance(1)
	got, err := b.Merge(sent)
	if err != nil {
		t.Fatalf("a clock without a max offset refused %s: %v", sent, err)
	}
	if !sent.Less(got) || !local.Less(got) {
		t.Fatalf("merge(%s) after %s = %s; want later than both", sent, local, got)
	}
	// B's next event, caused by what it received, orders after A's despite
	// B's wall clock being six minutes behind A's.
	if next := b.Tick(); !sent.Less(next) {
		t.Fatalf("B's next tick %s does not order after A's %s", next, sent)
	}
	// Equal walls: the logical counter takes the larger side and moves on.
	c := New("C", clock.NewNode("C", truth, 0))
	c.last = Timestamp{WallMs: 10, Logical: 7, Node: "C"}
	if got := mergeAt("C", c.last, Timestamp{WallMs: 10, Logical: 9, Node: "D"}, 5); got != (Timestamp{WallMs: 10, Logical: 10, Node: "C"}) {
		t.Fatalf("merge of equal walls = %s; want 10.10@C", got)
	}
}

func TestLogicalOverflowCarriesIntoTheWall(t *testing.T) {
	truth := clock.NewVirtual(start)
	c := New("A", clock.NewNode("A", truth, 0))
	c.last = Timestamp{WallMs: start, Logical: math.MaxUint32, Node: "A"}
	prev := c.last
	if got := c.Tick(); !prev.Less(got) {
		t.Fatalf("tick at the top of the counter went from %s to %s", prev, got)
	}
}

// Random walks of ticks, merges, skews and steps on two nodes: the reference
// must keep every law, whatever the clocks do.
func TestReferenceLawsUnderRandomClocks(t *testing.T) {
	hunt.Check(t, func(t *rapid.T) {
		truth := clock.NewVirtual(start)
		walls := []*clock.Node{clock.NewNode("A", truth, 0), clock.NewNode("B", truth, 0)}
		clocks := []hlc.Clock{New("A", walls[0]), New("B", walls[1])}
		last := make([]Timestamp, 2)
		var sent []Timestamp
		for range rapid.IntRange(1, 40).Draw(t, "ops") {
			n := rapid.IntRange(0, 1).Draw(t, "node")
			var got Timestamp
			switch op := rapid.IntRange(0, 4).Draw(t, "op"); op {
			case 0:
				got = clocks[n].Tick()
				sent = append(sent, got)
			case 1:
				if len(sent) == 0 {
					continue
				}
				remote := sent[rapid.IntRange(0, len(sent)-1).Draw(t, "msg")]
				var err error
				if got, err = clocks[n].Merge(remote); err != nil || !remote.Less(got) {
					t.Fatalf("merge of %s returned %s", remote, got)
				}
			case 2:
				truth.Advance(rapid.Int64Range(0, 1000).Draw(t, "advance"))
				continue
			case 3:
				walls[n].Step(rapid.Int64Range(-600_000, 600_000).Draw(t, "step"))
				continue
			default:
				walls[n].SetSkew(rapid.Int64Range(-600_000, 600_000).Draw(t, "skew"))
				continue
			}
			if !last[n].Less(got) {
				t.Fatalf("node %d went from %s to %s", n, last[n], got)
			}
			if got.WallMs < walls[n].NowMs() {
				t.Fatalf("stamp %s is behind the physical clock %d", got, walls[n].NowMs())
			}
			last[n] = got
		}
	})
}
