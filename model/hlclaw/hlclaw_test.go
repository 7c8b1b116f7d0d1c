package hlclaw

import (
	"math"
	"slices"
	"testing"

	"github.com/idemcheck/idemcheck/internal/hunt"

	"pgregory.net/rapid"
)

// The canonical algorithm must obey every law whatever the physical clock
// does: otherwise the laws, or the algorithm used to explain them, are wrong.
func TestCanonicalObeysTheLaws(t *testing.T) {
	hunt.Check(t, func(t *rapid.T) {
		nodes := []string{"A", "B"}
		last := map[string]Stamp{}
		has := map[string]bool{}
		var rs []Reading
		n := rapid.IntRange(1, 30).Draw(t, "n")
		for range n {
			node := rapid.SampledFrom(nodes).Draw(t, "node")
			phys := rapid.Int64Range(0, 2000).Draw(t, "phys")
			r := Reading{Node: node, PhysMs: phys, HasPrev: has[node], Prev: last[node]}
			if rapid.Bool().Draw(t, "merge") {
				r.Op = OpMerge
				r.Remote = Stamp{WallMs: rapid.Int64Range(0, 2000).Draw(t, "rwall"), Logical: uint32(rapid.IntRange(0, 3).Draw(t, "rlog")), Node: "R"}
				r.Got = Merge(node, last[node], r.Remote, phys)
			} else {
				r.Op = OpTick
				r.Got = Tick(node, last[node], phys)
			}
			rs = append(rs, r)
			last[node], has[node] = r.Got, true
		}
		if v := CheckReadings(rs); len(v) > 0 {
			t.Fatalf("canonical HLC breaks %s: %s", v[0].Law, v[0].Detail)
		}
	})
}

func TestLogicalOverflowCarriesIntoWall(t *testing.T) {
	prev := Stamp{WallMs: 10, Logical: math.MaxUint32, Node: "A"}
	got := Tick("A", prev, 5)
	if Compare(got, prev) <= 0 || got != (Stamp{WallMs: 11, Node: "A"}) {
		t.Fatalf("Tick after max logical = %s", got)
	}
}

func TestCheckReadingsNamesEachLaw(t *testing.T) {
	a := func(w int64, l uint32) Stamp { return Stamp{WallMs: w, Logical: l, Node: "A"} }
	rs := []Reading{
		{Node: "A", Op: OpTick, PhysMs: 100, Got: a(100, 0)},
		{Node: "A", Op: OpTick, PhysMs: 50, WallChangeMs: -50, HasPrev: true, Prev: a(100, 0), Got: a(50, 0)},
		{Node: "A", Op: OpMerge, PhysMs: 60, HasPrev: true, Prev: a(50, 0), Remote: Stamp{WallMs: 900, Node: "B"}, Got: a(60, 0)},
		{Node: "A", Op: OpTick, PhysMs: 70, HasPrev: true, Prev: a(60, 0), Got: Stamp{WallMs: 65, Node: "B"}},
	}
	var laws []Law
	for _, v := range CheckReadings(rs) {
		laws = append(laws, v.Law)
	}
	want := []Law{Monotonic, MergeDominates, OwnNode, PhysicalBound}
	if !slices.Equal(laws, want) {
		t.Fatalf("laws = %v; want %v", laws, want)
	}
}

func TestCausalPastsAreTransitive(t *testing.T) {
	past := CausalPasts([]Action{
		{Node: "A", Emit: "e1"},
		{Node: "C", Emit: "e2"},
		{Node: "B", Receive: "e1"},
		{Node: "B", Emit: "e3"},
		{Node: "C", Receive: "e3"},
		{Node: "C", Emit: "e4"},
		{Node: "A", Receive: "e9"}, // never emitted: carries nothing
		{Node: "A", Emit: "e5"},
	})
	want := map[string][]string{
		"e1": {}, "e2": {}, "e3": {"e1"}, "e4": {"e1", "e2", "e3"}, "e5": {"e1"},
	}
	for e, w := range want {
		if !slices.Equal(past[e], w) {
			t.Errorf("past(%s) = %v; want %v", e, past[e], w)
		}
	}
}

func TestCheckCausality(t *testing.T) {
	es := []Emission{
		{Event: "e1", Stamp: Stamp{WallMs: 500, Node: "A"}},
		{Event: "e2", Stamp: Stamp{WallMs: 400, Node: "B"}, Past: []string{"e1"}},
		{Event: "e3", Stamp: Stamp{WallMs: 600, Node: "B"}, Past: []string{"e1", "e2"}},
		{Event: "e4", Stamp: Stamp{WallMs: 700, Node: "B"}, Past: []string{"e0"}},
	}
	v := CheckCausality(es)
	if len(v) != 2 || v[0].Index != 1 || v[1].Index != 3 {
		t.Fatalf("violations = %+v; want e2 after e1 and e4's unknown past", v)
	}
}
