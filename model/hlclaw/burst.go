package hlclaw

import (
	"fmt"
	"math"
	"strings"
)

// Run is a stretch of a burst's stamps that share wall and node and whose
// logical counter counts up by one from First's: Count stamps in little
// space. A burst of tens of thousands of ticks from a correct clock is one
// or two runs, and the laws judge a run from its first stamp alone (see
// CheckReadings), so a burst costs what its runs cost, not its ticks.
type Run struct {
	First Stamp
	Count int
}

// Last is the run's last stamp.
func (r Run) Last() Stamp { return r.at(r.Count - 1) }

// at is the run's stamp k (from 0).
func (r Run) at(k int) Stamp {
	s := r.First
	s.Logical += uint32(k)
	return s
}

// Extends reports whether s is the stamp that continues r: same wall and
// node, the logical counter one up, without overflowing.
func (r Run) Extends(s Stamp) bool {
	last := r.Last()
	return s.WallMs == last.WallMs && s.WallNs == last.WallNs && s.Node == last.Node &&
		last.Logical < math.MaxUint32 && s.Logical == last.Logical+1
}

// AppendRun adds s to a burst's runs: it extends the last run when it can,
// or starts a new one.
func AppendRun(runs []Run, s Stamp) []Run {
	if n := len(runs); n > 0 && runs[n-1].Extends(s) {
		runs[n-1].Count++
		return runs
	}
	return append(runs, Run{First: s, Count: 1})
}

// Ticks is the number of ticks of a burst reading.
func (r Reading) Ticks() int {
	n := 0
	for _, run := range r.Runs {
		n += run.Count
	}
	return n
}

// StampAt is tick k (from 1) of a burst reading: for k = 0, the node's
// stamp before the burst (and whether it had one).
func (r Reading) StampAt(k int) (Stamp, bool) {
	if k == 0 {
		return r.Prev, r.HasPrev
	}
	for _, run := range r.Runs {
		if k <= run.Count {
			return run.at(k - 1), true
		}
		k -= run.Count
	}
	return Stamp{}, false
}

// TickReading is tick k (from 1) of a burst reading as the single Tick it
// stands for: its inputs and the stamp it got. The canonical clock's answer
// to the same inputs explains a broken law.
func (r Reading) TickReading(k int) Reading {
	t := Reading{Node: r.Node, Op: OpTick, PhysMs: r.PhysMs, MaxOffsetNs: r.MaxOffsetNs, GranularityNs: r.GranularityNs}
	if k == 1 {
		t.WallChangeMs = r.WallChangeMs
	}
	t.Prev, t.HasPrev = r.StampAt(k - 1)
	t.Got, _ = r.StampAt(k)
	return t
}

// checkBurst judges every tick of burst r (at index i) and returns one
// violation per law broken, at the first tick that breaks it, with the
// number of ticks that do. Within a run only its first tick can break a
// law the tick before did not: the rest go one logical step up (so they are
// later), on the same wall (so as far from the physical clock) and with the
// same node.
func checkBurst(i int, r Reading) []Violation {
	var out []Violation
	tick := 1
	t := r.TickReading(1)
	for _, run := range r.Runs {
		t.Got = run.First
		for _, v := range checkOne(nil, i, t) {
			n := 1
			if v.Law == OwnNode || v.Law == PhysicalBound {
				n = run.Count
			}
			if k := lawIndex(out, v.Law); k >= 0 {
				out[k].Ticks += n
				continue
			}
			v.Tick, v.Ticks = tick, n
			out = append(out, v)
		}
		tick += run.Count
		t.Prev, t.HasPrev, t.WallChangeMs = run.Last(), true, 0
	}
	total := tick - 1
	for k := range out {
		v := &out[k]
		if total == 1 {
			v.Detail = "the burst's one tick: " + v.Detail
			continue
		}
		v.Detail = fmt.Sprintf("tick %d of a burst of %d breaks it first, %d tick(s) in all: %s; around it: %s",
			v.Tick, total, v.Ticks, v.Detail, r.around(v.Tick))
	}
	return out
}

func lawIndex(vs []Violation, l Law) int {
	for k, v := range vs {
		if v.Law == l {
			return k
		}
	}
	return -1
}

// around lists the stamps of the ticks next to tick k of a burst, k's in
// brackets, so a report shows where the order broke.
func (r Reading) around(k int) string {
	var parts []string
	for j := k - 2; j <= k+2; j++ {
		if j < 0 {
			continue
		}
		s, ok := r.StampAt(j)
		if !ok {
			continue
		}
		label := fmt.Sprintf("tick %d %s", j, s)
		if j == 0 {
			label = "before the burst " + s.String()
		}
		if j == k {
			label = "[" + label + "]"
		}
		parts = append(parts, label)
	}
	return strings.Join(parts, ", ")
}
