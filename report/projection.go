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

// projView is a projection run: the causal history as a timeline with a
// lane per node, and what each projector of each replica ended with against
// the model.
type projView struct {
	Timeline *timeline
	Replicas []replicaView
}

type replicaView struct {
	Name       string
	Deliveries string
	Projectors []projectorView
}

type projectorView struct {
	Name    string
	Claimed bool
	Applied int
	Dropped int
	Orders  []orderCell
	Wrong   bool
}

type orderCell struct {
	Order string
	Got   string
	Want  string
	Wrong bool
}

const laneTime = "time"

var stepRef = regexp.MustCompile(`\bstep (\d+)\b`)

// projectionView lays out a projection run.
func projectionView(out *runner.Outcome, verdicts []properties.Verdict) *projView {
	p, res := out.Scenario.Projection, out.Projection
	tl := &timeline{Kind: string(scenario.KindProjection)}
	tl.Lanes = append(tl.Lanes, lane{ID: laneTime, Name: "true time", Sub: "advances", Class: "world"})
	skew := map[string]int64{}
	for _, n := range p.Nodes {
		skew[n.Name] = n.SkewMs
		tl.Lanes = append(tl.Lanes, lane{ID: n.Name, Name: "node " + n.Name, Sub: "wall clock " + signedMs(n.SkewMs) + " · HLC", Class: "worker"})
	}
	flags := map[int][]string{}
	for _, v := range verdicts {
		if v.Pass {
			continue
		}
		for _, d := range v.Details {
			for _, m := range stepRef.FindAllStringSubmatch(d, -1) {
				n, _ := strconv.Atoi(m[1])
				flags[n-1] = append(flags[n-1], v.Property+": "+d)
			}
		}
	}
	now := int64(0)
	for i, st := range p.Steps {
		rw := row{Step: "step " + strconv.Itoa(i+1), Flags: flags[i]}
		rw.Line = stepLine(out.Trace, i)
		rw.Tip = traceLine(out.Trace, rw.Line)
		laneID, c := projChip(i, st, res, skew, &now)
		rw.Time = "+" + strconv.FormatInt(now, 10) + "ms"
		tl.addRow(rw, map[string][]chip{laneID: {c}})
	}
	return &projView{Timeline: tl, Replicas: replicaViews(p, res)}
}

// projChip draws step i in its lane, keeping the true time and the skews.
func projChip(i int, st scenario.ProjectionStep, res *runner.ProjectionResult, skew map[string]int64, now *int64) (string, chip) {
	wall := func(node string) string { return "wall t=" + signedMs(*now+skew[node]) }
	switch st.Op {
	case scenario.OpAdvance:
		*now += st.Ms
		return laneTime, chip{Kind: string(st.Op), Label: fmt.Sprintf("+%dms", st.Ms), Detail: "true time t=" + signedMs(*now), Class: "clock"}
	case scenario.OpSkew:
		skew[st.Node] = st.Ms
		return st.Node, chip{Kind: string(st.Op), Label: "clock skewed to " + signedMs(st.Ms), Detail: wall(st.Node), Class: "clock skew"}
	case scenario.OpClockStep:
		skew[st.Node] += st.Ms
		return st.Node, chip{Kind: string(st.Op), Label: "clock steps " + signedMs(st.Ms), Detail: wall(st.Node), Class: "clock skew"}
	case scenario.OpBurst:
		return st.Node, chip{Kind: string(st.Op), Label: fmt.Sprintf("burst of %d local events", st.Count), Detail: wall(st.Node), Class: "produce"}
	case scenario.OpEmit:
		c := chip{Kind: string(st.Op), Label: fmt.Sprintf("emit %s %s %s", st.ID, st.Kind, st.Order), Detail: wall(st.Node), Class: "produce"}
		for _, e := range res.Events {
			if e.Step == i {
				c.Detail += fmt.Sprintf(" · hlc %s · seq %d", e.Event.HLC, e.Event.Seq)
			}
		}
		return st.Node, c
	case scenario.OpReceive:
		c := chip{Kind: string(st.Op), Label: "receive " + st.Event, Detail: wall(st.Node), Class: "deliver"}
		for _, r := range res.Readings {
			if r.Step == i && r.Refused {
				c.Detail += fmt.Sprintf(" · merge %s refused: %s", r.Remote, r.Error)
				c.Class = "deliver warn"
			} else if r.Step == i {
				c.Detail += fmt.Sprintf(" · merge %s → %s", r.Remote, r.Got)
				if !r.Remote.Less(r.Got) {
					c.Class = "deliver warn"
				}
			}
		}
		return st.Node, c
	}
	return laneTime, chip{Kind: string(st.Op), Label: string(st.Op)}
}

// stepLine finds the trace line that tells step i ("step 3: ..."); 0 if none.
func stepLine(t *runner.Trace, i int) int {
	marker := " step " + strconv.Itoa(i+1) + ": "
	for n, l := range t.Lines() {
		if strings.Contains(l, marker) {
			return n + 1
		}
	}
	return 0
}

// replicaViews sets every projector's final state against the model's.
func replicaViews(p *scenario.Projection, res *runner.ProjectionResult) []replicaView {
	expected, _ := properties.ExpectedStatuses(res)
	var orders []string
	for o := range expected {
		orders = append(orders, o)
	}
	slices.Sort(orders)
	var out []replicaView
	for i, rr := range res.Replicas {
		rv := replicaView{Name: rr.Name}
		if i < len(p.Replicas) {
			rv.Deliveries = fmt.Sprint(p.Replicas[i].Deliveries)
		}
		for _, run := range rr.Projectors {
			pv := projectorView{Name: run.Name, Claimed: run.Claimed, Applied: run.Applied, Dropped: run.Dropped}
			got := run.Statuses()
			for _, o := range orders {
				oc := orderCell{Order: o, Got: orAbsent(got[o]), Want: orAbsent(expected[o])}
				oc.Wrong = oc.Got != oc.Want
				pv.Wrong = pv.Wrong || oc.Wrong
				pv.Orders = append(pv.Orders, oc)
			}
			rv.Projectors = append(rv.Projectors, pv)
		}
		out = append(out, rv)
	}
	return out
}

func orAbsent(s string) string {
	if s == "" {
		return "absent"
	}
	return s
}
