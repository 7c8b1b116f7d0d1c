package hlclaw

import (
	"math"
	"strings"
	"testing"

	"github.com/idemcheck/idemcheck/internal/hunt"

	"pgregory.net/rapid"
)

// A burst judged from its runs breaks exactly the laws its ticks, judged
// one by one, break: the same laws, first at the same tick, as many times.
func TestBurstJudgedAsItsTicks(t *testing.T) {
	hunt.Check(t, func(t *rapid.T) {
		phys := int64(1000)
		r := Reading{Node: "A", Op: OpBurst, PhysMs: phys, GranularityNs: rapid.SampledFrom([]int64{0, 65_536}).Draw(t, "granularity")}
		if rapid.Bool().Draw(t, "hasPrev") {
			r.HasPrev, r.Prev = true, Stamp{WallMs: rapid.Int64Range(998, 1001).Draw(t, "prevWall"), Logical: uint32(rapid.IntRange(0, 3).Draw(t, "prevLogical")), Node: "A"}
			r.WallChangeMs = rapid.Int64Range(-5, 0).Draw(t, "wallChange")
		}
		var ticks []Reading
		prev, hasPrev := r.Prev, r.HasPrev
		for range rapid.IntRange(1, 40).Draw(t, "ticks") {
			var s Stamp
			switch rapid.IntRange(0, 4).Draw(t, "kind") {
			case 0, 1: // counts up: the usual
				s = prev
				s.Logical++
				s.Node = "A"
			default: // anything: behind, backwards, another node, the max counter
				s = Stamp{WallMs: rapid.Int64Range(998, 1001).Draw(t, "wall"), Node: rapid.SampledFrom([]string{"A", "B"}).Draw(t, "node"),
					Logical: rapid.SampledFrom([]uint32{0, 1, 2, math.MaxUint32 - 1, math.MaxUint32}).Draw(t, "logical")}
			}
			one := Reading{Node: "A", Op: OpTick, PhysMs: phys, HasPrev: hasPrev, Prev: prev, Got: s, GranularityNs: r.GranularityNs}
			if len(ticks) == 0 {
				one.WallChangeMs = r.WallChangeMs
			}
			ticks = append(ticks, one)
			r.Runs = AppendRun(r.Runs, s)
			prev, hasPrev = s, true
		}
		r.Got = prev
		type seen struct{ first, count int }
		want := map[Law]*seen{}
		for _, v := range CheckReadings(ticks) {
			if want[v.Law] == nil {
				want[v.Law] = &seen{first: v.Index + 1}
			}
			want[v.Law].count++
		}
		got := CheckReadings([]Reading{r})
		if len(got) != len(want) {
			t.Fatalf("burst breaks %d law(s), its ticks %d: %+v", len(got), len(want), got)
		}
		for _, v := range got {
			w := want[v.Law]
			if w == nil || v.Tick != w.first || v.Ticks != w.count {
				t.Fatalf("%s: first at tick %d, %d tick(s); the ticks say %+v", v.Law, v.Tick, v.Ticks, w)
			}
		}
		for k := range ticks {
			if tr := r.TickReading(k + 1); tr.Got != ticks[k].Got || tr.Prev != ticks[k].Prev || tr.HasPrev != ticks[k].HasPrev || tr.WallChangeMs != ticks[k].WallChangeMs {
				t.Fatalf("TickReading(%d) = %+v, want %+v", k+1, tr, ticks[k])
			}
		}
	})
}

// A 16-bit counter that wraps in a burst of 65,540 ticks: one violation of
// monotonic, at tick 65,537, showing the stamps around it, in two runs.
func TestBurstWrapIsOneLineWithItsTick(t *testing.T) {
	r := Reading{Node: "A", Op: OpBurst, PhysMs: 7}
	s := Stamp{WallMs: 7, Node: "A"}
	for range 65_540 {
		r.Runs = AppendRun(r.Runs, s)
		s.Logical = (s.Logical + 1) & 0xFFFF
	}
	if len(r.Runs) != 2 || r.Ticks() != 65_540 {
		t.Fatalf("runs %+v", r.Runs)
	}
	vs := CheckReadings([]Reading{r})
	if len(vs) != 1 || vs[0].Law != Monotonic || vs[0].Tick != 65_537 || vs[0].Ticks != 1 {
		t.Fatalf("violations %+v, want monotonic once at tick 65537", vs)
	}
	for _, want := range []string{"tick 65537 of a burst of 65540", "tick 65536 7.65535@A", "[tick 65537 7.0@A]", "tick 65538 7.1@A"} {
		if !strings.Contains(vs[0].Detail, want) {
			t.Errorf("detail %q does not say %q", vs[0].Detail, want)
		}
	}
}

// A clock whose wall sign-extends past 32,767 events stamps the rest of the
// burst behind the physical clock: one physical-bound violation, counting
// every tick that breaks it, not one line per tick.
func TestBurstPhysicalBoundIsCountedOnce(t *testing.T) {
	r := Reading{Node: "A", Op: OpBurst, PhysMs: 1000}
	for k := range 65_536 {
		s := Stamp{WallMs: 1000, Logical: uint32(k), Node: "A"}
		if k >= 32_768 {
			s = Stamp{WallMs: 999, Logical: uint32(k - 32_768), Node: "A"}
		}
		r.Runs = AppendRun(r.Runs, s)
	}
	vs := CheckReadings([]Reading{r})
	if len(vs) != 2 || vs[0].Law != Monotonic || vs[1].Law != PhysicalBound {
		t.Fatalf("violations %+v, want monotonic then physical-bound", vs)
	}
	if pb := vs[1]; pb.Tick != 32_769 || pb.Ticks != 32_768 || !strings.Contains(pb.Detail, "32768 tick(s) in all") {
		t.Fatalf("physical-bound %+v, want first at tick 32769 and 32768 ticks in all", pb)
	}
}
