package report

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/idemcheck/idemcheck/faults/runner"
	"github.com/idemcheck/idemcheck/faults/scenario"
	"github.com/idemcheck/idemcheck/properties"
)

// timeline is a swimlane view of one run: a column per lane, a row per
// action, each action a chip in its lane.
type timeline struct {
	Kind  string
	Lanes []lane
	Rows  []row
}

// MinWidth is the timeline's least width in pixels. The table takes the
// page's width: the line, time and "marked because" columns have theirs
// (see the colgroup's CSS) and the lanes share the rest equally, so that a
// lane reads as a lane and a wide page gives its SQL room; below this
// width the page scrolls instead of squeezing the lanes further.
func (t *timeline) MinWidth() int { return 52 + 78 + minLane*len(t.Lanes) + 240 }

// Cols is the number of the timeline's columns: line, time, a lane each
// and "marked because". A separator row spans exactly them: a wider span
// would add columns the lanes share their width with.
func (t *timeline) Cols() int { return 2 + len(t.Lanes) + 1 }

// minLane is the narrowest a lane gets, in pixels.
const minLane = 130

// lane is one column: a worker, or a part of the world.
type lane struct {
	ID    string
	Name  string
	Sub   string
	Class string
}

// row is one action (or a phase separator, when Separator is set). Line
// is the number of the trace line that tells the action, Tip its text.
type row struct {
	Line      int
	Tip       string
	Time      string
	Step      string
	Separator string
	Cells     []cell
	Flags     []string
}

// cell holds a lane's chips on a row.
type cell struct {
	Lane  string
	Chips []chip
}

// addRow adds rw to the timeline with the chips of each lane, in the
// lanes' order; every chip of a flagged row is marked.
func (t *timeline) addRow(rw row, cells map[string][]chip) {
	if len(rw.Flags) > 0 {
		for _, chips := range cells {
			for i := range chips {
				chips[i].Class += " flagged"
			}
		}
	}
	for _, l := range t.Lanes {
		rw.Cells = append(rw.Cells, cell{Lane: l.ID, Chips: cells[l.ID]})
	}
	t.Rows = append(t.Rows, rw)
}

// chip is one action drawn in a lane.
type chip struct {
	Kind   string
	Label  string
	Detail string
	Class  string
}

// lanes of the world in a consumption timeline, before and after the workers.
const (
	laneBroker = "broker"
	laneClock  = "clock"
	laneLedger = "ledger"
)

// consumptionTimeline lays out a consumption run: the broker and the clock
// on the left, a lane per worker, the ledger on the right.
func consumptionTimeline(out *runner.Outcome, verdicts []properties.Verdict) *timeline {
	r := out.Consumption
	cfg := r.Config
	tl := &timeline{Kind: string(scenario.KindConsumption)}
	skew := map[string]int64{}
	for _, n := range cfg.Nodes {
		skew[n.Name] = n.SkewMs
	}
	tl.Lanes = append(tl.Lanes,
		lane{ID: laneBroker, Name: "broker", Sub: "produce · duplicate · replay", Class: "world"},
		lane{ID: laneClock, Name: "clocks", Sub: "true time · expiries · skew", Class: "world"})
	nodeOf := map[string]string{}
	for _, w := range cfg.Workers {
		nodeOf[w.Name] = w.Node
		tl.Lanes = append(tl.Lanes, lane{ID: w.Name, Name: w.Name,
			Sub: fmt.Sprintf("group %s · node %s (%s)", w.Consumer, w.Node, signedMs(skew[w.Node])), Class: "worker"})
	}
	tl.Lanes = append(tl.Lanes, lane{ID: laneLedger, Name: "ledger", Sub: "credits · unique constraint", Class: "ledger"})

	flags := consumptionFlags(verdicts)
	ex := &expiries{leaseMs: cfg.LeaseMs, ackMs: cfg.AckTimeoutMs}
	amount := map[string]int64{}
	for _, e := range r.Events {
		amount[e.ID] = e.AmountCents
	}
	steps := out.Scenario.Consumption.Steps
	phase, prevMs := runner.PhaseSchedule, int64(0)
	for _, a := range r.Actions {
		if a.Phase != phase {
			phase = a.Phase
			tl.Rows = append(tl.Rows, row{Separator: phaseNote(phase)})
		}
		rw := row{Line: a.Line, Tip: traceLine(out.Trace, a.Line), Time: "+" + strconv.FormatInt(a.AtMs, 10) + "ms", Flags: flags[a.Line]}
		if a.Phase == runner.PhaseSchedule && a.Step >= 0 {
			rw.Step = "step " + strconv.Itoa(a.Step+1)
		}
		cells := map[string][]chip{}
		laneID, c := actionChip(a, ex, prevMs, nodeOf, skew, steps, r)
		if _, again, ok := strings.Cut(rw.Tip, " again: "); ok && a.Kind == runner.ActProduce {
			// A producer retry the gate answered: nothing was enqueued.
			c.Label, c.Detail = "produce "+a.Key.ID+" again", again
		}
		cells[laneID] = append(cells[laneID], c)
		if lc, ok := ledgerChip(a, amount); ok {
			cells[laneLedger] = append(cells[laneLedger], lc)
		}
		tl.addRow(rw, cells)
		prevMs = a.AtMs
	}
	return tl
}

func phaseNote(p runner.Phase) string {
	switch p {
	case runner.PhaseDrain:
		return "drain — the schedule is over; the runner drives the system until nothing is pending"
	case runner.PhaseReplay:
		return "replay — the whole stream is delivered again and drained"
	}
	return string(p)
}

// actionChip draws one action and says in which lane.
func actionChip(a runner.Action, ex *expiries, prevMs int64, nodeOf map[string]string, skew map[string]int64,
	steps []scenario.Step, r *runner.ConsumptionResult) (string, chip) {
	id := a.Key.ID
	switch a.Kind {
	case runner.ActProduce:
		c := chip{Kind: string(a.Kind), Label: "produce " + id, Detail: fmt.Sprintf("offset %d", a.Offset), Class: "produce"}
		if a.Err != "" {
			c.Detail, c.Class = "rejected: "+a.Err, "produce warn"
		}
		return laneBroker, c
	case runner.ActProduceFail:
		return laneBroker, chip{Kind: string(a.Kind), Label: "produce " + id + " fails", Detail: "gate records FAILED; nothing enqueued", Class: "produce warn"}
	case runner.ActDuplicate:
		return laneBroker, chip{Kind: string(a.Kind), Label: "duplicate " + id, Detail: fmt.Sprintf("copies of offset %d", a.Offset), Class: "fault"}
	case runner.ActReplay:
		return laneBroker, chip{Kind: string(a.Kind), Label: "replay stream", Detail: "every message delivered again", Class: "fault"}
	case runner.ActAdvance:
		c := chip{Kind: string(a.Kind), Label: fmt.Sprintf("time +%dms", a.AtMs-prevMs), Detail: "now t=" + signedMs(a.AtMs), Class: "clock"}
		if exp := ex.expire(prevMs, a.AtMs); len(exp) > 0 {
			c.Detail += " · " + strings.Join(exp, " · ")
			c.Class = "clock expiry"
		}
		return laneClock, c
	case runner.ActSkew, runner.ActClockStep:
		return laneClock, clockChip(a, steps, skew)
	case runner.ActDeliver:
		ex.delivered(a)
		d := fmt.Sprintf("offset %d · attempt %d", a.Offset, a.Attempts)
		if a.Origin != "" && a.Origin != "produced" {
			d += " · " + string(a.Origin)
		}
		return a.Worker, chip{Kind: string(a.Kind), Label: "◀ receives " + id, Detail: d, Class: "deliver"}
	case runner.ActCrash:
		// The crashed worker's lease and delivery stay open: the store and
		// the broker learn of a crash only through their timeouts.
		return a.Worker, chip{Kind: string(a.Kind), Label: "✖ CRASH", Detail: "in-flight work lost; restarts idle", Class: "crash"}
	case runner.ActCleanup:
		return a.Worker, cleanupChip(a, nodeOf, skew, r)
	}
	return a.Worker, workerChip(a, ex)
}

// lineRef finds the trace lines a verdict's details point at.
var lineRef = regexp.MustCompile(`\bline (\d+)\b`)

// consumptionFlags collects, by trace line, why an action is marked: every
// line a failed verdict names.
func consumptionFlags(verdicts []properties.Verdict) map[int][]string {
	flags := map[int][]string{}
	for _, v := range verdicts {
		if v.Pass {
			continue
		}
		for _, d := range v.Details {
			for _, m := range lineRef.FindAllStringSubmatch(d, -1) {
				n, _ := strconv.Atoi(m[1])
				if !slices.Contains(flags[n], v.Property+": "+d) {
					flags[n] = append(flags[n], v.Property+": "+d)
				}
			}
		}
	}
	return flags
}

// traceLine returns the text of trace line n (numbered from 1).
func traceLine(t *runner.Trace, n int) string { return t.Line(n) }

// signedMs renders a millisecond offset compactly: +1500ms, -5m, +30m.
func signedMs(ms int64) string {
	sign := "+"
	if ms < 0 {
		sign, ms = "-", -ms
	}
	if ms != 0 && ms%60_000 == 0 {
		return fmt.Sprintf("%s%dm", sign, ms/60_000)
	}
	return fmt.Sprintf("%s%dms", sign, ms)
}
