package runner

import (
	"fmt"
	"math"
	"strings"

	"github.com/idemcheck/idemcheck/faults/scenario"
	"github.com/idemcheck/idemcheck/impl/contract/hlc"
)

// StampRun is a stretch of a burst's stamps that share wall and node and
// whose logical counter counts up by one from First's. A burst of 65,536
// ticks from a correct clock is one or two runs: recording runs instead of
// readings keeps a burst's cost to the clock's ticks.
type StampRun struct {
	First hlc.Timestamp `json:"first"`
	Count int           `json:"count"`
}

// Last is the run's last stamp.
func (r StampRun) Last() hlc.Timestamp {
	s := r.First
	s.Logical += uint32(r.Count - 1)
	return s
}

// Stamps is the number of stamps the clock handed out in reading r: a
// burst's ticks, none for a refused merge, one otherwise.
func (r HLCReading) Stamps() int {
	switch {
	case r.Op == OpBurst:
		n := 0
		for _, run := range r.Ticks {
			n += run.Count
		}
		return n
	case r.Refused:
		return 0
	}
	return 1
}

// appendStamp adds s to runs, extending the last run when s continues it.
func appendStamp(runs []StampRun, s hlc.Timestamp) []StampRun {
	if n := len(runs); n > 0 {
		last := &runs[n-1]
		end := last.First.Logical + uint32(last.Count-1)
		if s.WallMs == last.First.WallMs && s.WallNs == last.First.WallNs && end < math.MaxUint32 &&
			s.Logical == end+1 && s.Node == last.First.Node {
			last.Count++
			return runs
		}
	}
	return append(runs, StampRun{First: s, Count: 1})
}

// burst stamps st.Count local events on st.Node within one instant. Every
// tick is judged by the laws; the stamps are recorded as runs in one
// reading, and the trace gets one line that shows each run (and so where
// the stamps stopped counting up).
func (w *projWorld) burst(i int, st scenario.ProjectionStep) error {
	c, ok := w.clocks[st.Node]
	if !ok {
		return fmt.Errorf("node %q is not listed", st.Node)
	}
	wall := w.walls[st.Node]
	prev, hasPrev := w.last[st.Node]
	r := HLCReading{
		Step: i, Node: st.Node, Op: OpBurst, PhysMs: wall.NowMs(),
		WallChangeMs: wall.SkewMs() - w.offset[st.Node], HasPrev: hasPrev, Prev: prev,
	}
	if b, ok := c.(hlc.Burster); ok {
		// One call for the whole burst; each stamp is judged as a Tick's.
		stamps := b.TickBurst(st.Count)
		if w.clockFailed(st.Node) {
			return nil
		}
		if len(stamps) != st.Count {
			return fmt.Errorf("node %s's clock stamped %d events of a burst of %d", st.Node, len(stamps), st.Count)
		}
		for _, s := range stamps {
			r.Ticks = appendStamp(r.Ticks, s)
		}
	} else {
		failer, _ := c.(hlc.Failer)
		for range st.Count {
			s := c.Tick()
			if failer != nil && w.clockFailed(st.Node) {
				return nil
			}
			r.Ticks = appendStamp(r.Ticks, s)
		}
	}
	r.Got = r.Ticks[len(r.Ticks)-1].Last()
	w.last[st.Node], w.offset[st.Node] = r.Got, wall.SkewMs()
	w.res.Readings = append(w.res.Readings, r)
	w.hist(histLine{kind: histBurst, step: i + 1, index: len(w.res.Readings) - 1})
	return nil
}

// burstRunsShown is how many runs a burst's trace line lists in full; a
// clock whose stamps break into more is shown by its first runs and every
// place where it went backwards, up to this many.
const burstRunsShown = 6

// describeRuns renders a burst's stamps run by run, with their ticks, and
// says where a run starts at or before the stamp that precedes it: where
// the order broke.
func describeRuns(prev hlc.Timestamp, hasPrev bool, runs []StampRun) string {
	var parts []string
	tick, shown, skipped := 1, 0, 0
	for k, run := range runs {
		back := (k > 0 || hasPrev) && run.First.Compare(prev) <= 0
		if shown < burstRunsShown && (back || shown < burstRunsShown/2 || len(runs) <= burstRunsShown) {
			if skipped > 0 {
				parts = append(parts, fmt.Sprintf("(%d run(s), each later than the one before)", skipped))
				skipped = 0
			}
			parts = append(parts, describeRun(run, tick, back, prev))
			shown++
		} else {
			skipped++
		}
		prev = run.Last()
		tick += run.Count
	}
	if skipped > 0 {
		parts = append(parts, fmt.Sprintf("... %d more run(s)", skipped))
	}
	return strings.Join(parts, ", then ")
}

func describeRun(run StampRun, tick int, back bool, prev hlc.Timestamp) string {
	var s string
	if run.Count == 1 {
		s = fmt.Sprintf("%s (tick %d)", run.First, tick)
	} else {
		s = fmt.Sprintf("%s .. %s (ticks %d-%d)", run.First, run.Last(), tick, tick+run.Count-1)
	}
	if back {
		s += fmt.Sprintf(" <- NOT LATER than %s at tick %d", prev, tick)
	}
	return s
}
