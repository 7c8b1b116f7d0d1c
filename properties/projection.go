package properties

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/google/go-cmp/cmp"
	"github.com/idemcheck/idemcheck/faults/runner"
	"github.com/idemcheck/idemcheck/faults/scenario"
	"github.com/idemcheck/idemcheck/impl/contract/hlc"
	"github.com/idemcheck/idemcheck/impl/contract/projector"
	"github.com/idemcheck/idemcheck/internal/law"
	"github.com/idemcheck/idemcheck/model/hlclaw"
	"github.com/idemcheck/idemcheck/model/order"
)

// The laws of the projection properties (the HLC laws are model/hlclaw's).
const (
	LawCausalFinalState = law.CausalFinalState
	LawConverge         = law.Converge
)

func init() {
	register(Property{Name: law.SkewSafeFinalState, Invariant: 7, Kind: scenario.KindProjection,
		Doc:   law.Doc(law.SkewSafeFinalState),
		Laws:  lawsOf(law.SkewSafeFinalState),
		Pass:  passSkewSafe,
		Notes: func(o *runner.Outcome) []string { return projCapped(judgeSkewSafe(o.Projection).notes) },
		Final: finalSkewSafe})
	register(Property{Name: law.HLCLaws, Invariant: 8, Kind: scenario.KindProjection,
		Doc:   law.Doc(law.HLCLaws),
		Laws:  lawsOf(law.HLCLaws),
		Pass:  passHLCLaws,
		Final: finalHLCLaws})
	register(Property{Name: law.ReplicaConvergence, Invariant: 9, Kind: scenario.KindProjection,
		Doc:   law.Doc(law.ReplicaConvergence),
		Laws:  lawsOf(law.ReplicaConvergence),
		Pass:  passConvergence,
		Final: finalConvergence})
}

// CausalPasts returns, for every emitted event of a projection run, the
// events that happened before it, in emission order.
func CausalPasts(res *runner.ProjectionResult) map[string][]string {
	actions := make([]hlclaw.Action, len(res.History))
	for i, h := range res.History {
		actions[i] = hlclaw.Action{Node: h.Node, Emit: h.Emit, Receive: h.Receive}
	}
	return hlclaw.CausalPasts(actions)
}

// ExpectedStatuses is the model's causally correct final status of every
// order of a projection run.
func ExpectedStatuses(res *runner.ProjectionResult) (map[string]string, error) {
	history := make([]order.Event, len(res.Events))
	for i, e := range res.Events {
		history[i] = order.Event{ID: e.Event.ID, OrderID: e.Event.OrderID, Kind: order.Kind(e.Event.Kind), Prev: e.Prev}
	}
	final, err := order.FinalStatus(history)
	if err != nil {
		return nil, fmt.Errorf("the causal history has no correct final state: %w", err)
	}
	out := make(map[string]string, len(final))
	for id, st := range final {
		out[id] = string(st)
	}
	return out, nil
}

// projMaxDetails caps the lines of a verdict: the first few say what is
// wrong, hundreds would bury it.
const projMaxDetails = 12

func projCapped(details []string) []string {
	if len(details) <= projMaxDetails {
		return details
	}
	return append(details[:projMaxDetails:projMaxDetails], fmt.Sprintf("... and %d more", len(details)-projMaxDetails))
}

// skewSafe is what the skew-safe judgement found.
type skewSafe struct {
	judged  int
	notes   []string
	breach  *Breach
	invalid string
}

func judgeSkewSafe(res *runner.ProjectionResult) skewSafe {
	expected, err := ExpectedStatuses(res)
	if err != nil {
		return skewSafe{invalid: err.Error()}
	}
	var details, notes []string
	var diff, culprit string
	judged := 0
	for _, rep := range res.Replicas {
		for _, run := range rep.Projectors {
			if endsAs(run, expected) {
				if run.Claimed {
					judged++
				}
				continue // the passing path builds nothing
			}
			got := run.Statuses()
			same := maps.Equal(expected, got)
			if !run.Claimed {
				if !same {
					notes = append(notes, fmt.Sprintf("baseline %s on replica %s ends wrong, as it is known to: %s", run.Name, rep.Name, projWrongOrders(expected, got)))
				}
				continue
			}
			judged++
			if same {
				continue
			}
			if culprit == "" {
				culprit, diff = run.Name, cmp.Diff(expected, got)
				details = append(details, fmt.Sprintf("diff below: the model (-want) against projector %s on replica %s (+got)", run.Name, rep.Name))
			}
			for _, id := range projSortedKeys(expected, got) {
				if got[id] != expected[id] {
					details = append(details, fmt.Sprintf("replica %s, projector %s: order %s ends %s (last applied %s), but its causal history ends %s: %s",
						rep.Name, run.Name, id, projOr(got[id], "absent"), projLastApplied(run, id), projOr(expected[id], "absent"), projChain(res, id)))
				}
			}
		}
	}
	out := skewSafe{judged: judged, notes: notes}
	if culprit != "" {
		b := breach(LawCausalFinalState, fmt.Sprintf("projector %s ended an order off its causally correct state", culprit), projCapped(append(details, notes...))...)
		b.Diff = diff
		out.breach = &b
	}
	return out
}

// endsAs reports whether run ended every order in the status want says,
// and no other order. A final state out of order (or listing an order
// twice) is not judged here: Statuses, the slow path, reads it.
func endsAs(run runner.ProjectorRun, want map[string]string) bool {
	if len(run.Final) != len(want) {
		return false
	}
	for i, st := range run.Final {
		if i > 0 && run.Final[i-1].OrderID >= st.OrderID {
			return false
		}
		if w, ok := want[st.OrderID]; !ok || w != string(st.Status) {
			return false
		}
	}
	return true
}

func finalSkewSafe(o *runner.Outcome, _ Monitor) []Breach {
	j := judgeSkewSafe(o.Projection)
	switch {
	case j.invalid != "":
		return []Breach{breach(LawCausalFinalState, "the scenario's causal history has no correct final state", j.invalid)}
	case j.judged == 0:
		return []Breach{breach(LawCausalFinalState, "the target claims no projector to judge", "system.Projection.Projectors is empty: nothing is held to the invariant")}
	case j.breach != nil:
		return []Breach{*j.breach}
	}
	return nil
}

func passSkewSafe(o *runner.Outcome, _ Monitor) string {
	return fmt.Sprintf("%d projector run(s) ended every order in its causally correct state", judgeSkewSafe(o.Projection).judged)
}

// projWrongOrders lists the orders got has wrong, for a one-line note.
func projWrongOrders(want, got map[string]string) string {
	var parts []string
	for _, id := range projSortedKeys(want, got) {
		if got[id] != want[id] {
			parts = append(parts, fmt.Sprintf("%s is %s, want %s", id, projOr(got[id], "absent"), projOr(want[id], "absent")))
		}
	}
	return strings.Join(parts, "; ")
}

// projChain describes an order's causal chain with every clock's say, which
// is what shows why a projector went wrong.
func projChain(res *runner.ProjectionResult, orderID string) string {
	var links []string
	for _, e := range res.Events {
		if e.Event.OrderID == orderID {
			links = append(links, fmt.Sprintf("%s %s by %s (occurredAt %d, seq %d, hlc %s)", e.Event.ID, e.Event.Kind, e.Node, e.Event.OccurredAtMs, e.Event.Seq, e.Event.HLC))
		}
	}
	return strings.Join(links, " -> ")
}

func projLastApplied(run runner.ProjectorRun, orderID string) string {
	for _, st := range run.Final {
		if st.OrderID == orderID {
			return st.Last.ID
		}
	}
	return "nothing"
}

func projOr(s, dflt string) string {
	if s == "" {
		return dflt
	}
	return s
}

// projSortedKeys is the sorted union of the maps' keys.
func projSortedKeys(a, b map[string]string) []string {
	var keys []string
	for k := range a {
		keys = append(keys, k)
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	return keys
}

func projStamp(t hlc.Timestamp) hlclaw.Stamp {
	return hlclaw.Stamp{WallMs: t.WallMs, WallNs: t.WallNs, Logical: t.Logical, Node: t.Node}
}

// hlcJudgement is every HLC law broken in a run.
type hlcJudgement struct {
	readings   []hlclaw.Reading
	pairs      int
	violations []hlclaw.Violation
}

func judgeHLC(res *runner.ProjectionResult) hlcJudgement {
	readings := make([]hlclaw.Reading, len(res.Readings))
	for i, r := range res.Readings {
		d := res.Declarations[r.Node]
		readings[i] = hlclaw.Reading{
			Node: r.Node, Op: hlclaw.Op(r.Op), PhysMs: r.PhysMs, WallChangeMs: r.WallChangeMs,
			HasPrev: r.HasPrev, Prev: projStamp(r.Prev), Remote: projStamp(r.Remote), Got: projStamp(r.Got),
			Refused: r.Refused, MaxOffsetNs: d.MaxOffset.Nanoseconds(), GranularityNs: d.WallGranularity.Nanoseconds(),
		}
		if r.Refused {
			readings[i].Sent = sending(res, r.Event)
		}
		if len(r.Ticks) > 0 {
			runs := make([]hlclaw.Run, len(r.Ticks))
			for k, run := range r.Ticks {
				runs[k] = hlclaw.Run{First: projStamp(run.First), Count: run.Count}
			}
			readings[i].Runs = runs
		}
	}
	pasts := CausalPasts(res)
	emissions := make([]hlclaw.Emission, len(res.Events))
	pairs := 0
	for i, e := range res.Events {
		emissions[i] = hlclaw.Emission{Event: e.Event.ID, Stamp: projStamp(e.Event.HLC), Past: pasts[e.Event.ID]}
		pairs += len(pasts[e.Event.ID])
	}
	return hlcJudgement{readings: readings, pairs: pairs, violations: append(hlclaw.CheckReadings(readings), hlclaw.CheckCausality(emissions)...)}
}

// sending is how event was stamped, for explaining a refusal of it: the
// sender's physical clock at its tick, and the true time it was emitted.
func sending(res *runner.ProjectionResult, event string) *hlclaw.Sending {
	for _, e := range res.Events {
		if e.Event.ID != event {
			continue
		}
		for _, r := range res.Readings {
			if r.Op == runner.OpTick && r.Event == event {
				return &hlclaw.Sending{Node: e.Node, PhysMs: r.PhysMs, TrueMs: e.TrueMs}
			}
		}
	}
	return nil
}

func passHLCLaws(o *runner.Outcome, _ Monitor) string {
	j := judgeHLC(o.Projection)
	ops := 0 // a burst's ticks each count
	for _, r := range o.Projection.Readings {
		ops += max(r.Stamps(), 1)
	}
	return fmt.Sprintf("%d HLC reading(s) and %d causal pair(s) obey every law", ops, j.pairs)
}

// finalHLCLaws reports every law broken, each as its own breach, with the
// canonical clock's answer to the same inputs as the diff.
func finalHLCLaws(o *runner.Outcome, _ Monitor) []Breach {
	res := o.Projection
	j := judgeHLC(res)
	byLaw := map[hlclaw.Law]*Breach{}
	var laws []hlclaw.Law
	for _, v := range j.violations {
		// Readings are located by the step that asked for them, causality
		// by the later event of the pair.
		var where string
		if v.Law == hlclaw.Causality {
			where = "event " + res.Events[v.Index].Event.ID
		} else {
			where = fmt.Sprintf("step %d", res.Readings[v.Index].Step+1)
		}
		b := byLaw[v.Law]
		if b == nil {
			b = &Breach{Law: string(v.Law), Summary: fmt.Sprintf("hlc law %s broken", v.Law)}
			var r hlclaw.Reading
			if v.Law != hlclaw.Causality {
				r = j.readings[v.Index]
			}
			if v.Tick > 0 {
				r = r.TickReading(v.Tick) // the burst's tick that broke the law first
			}
			if v.Law != hlclaw.Causality && !r.Refused && r.Got.WallNs == 0 {
				// What a correct clock would have answered the same inputs
				// shows the bug better than the law alone. (The canonical
				// clock speaks milliseconds: a nanosecond clock's answer is
				// not comparable field by field.)
				want := hlclaw.Tick(r.Node, r.Prev, r.PhysMs)
				if r.Op == hlclaw.OpMerge {
					want = hlclaw.Merge(r.Node, r.Prev, r.Remote, r.PhysMs)
				}
				b.Diff = cmp.Diff(want, r.Got)
				at := fmt.Sprintf("step %d", res.Readings[v.Index].Step+1)
				if v.Tick > 0 {
					at += fmt.Sprintf(", tick %d of the burst", v.Tick)
				}
				b.Details = append(b.Details, "diff: the canonical HLC (-want) against the implementation (+got) given the same inputs at "+at)
			}
			byLaw[v.Law] = b
			laws = append(laws, v.Law)
		}
		b.Details = append(b.Details, fmt.Sprintf("%s: %s", where, v.Detail))
	}
	var out []Breach
	for _, l := range laws {
		b := byLaw[l]
		b.Details = projCapped(b.Details)
		out = append(out, *b)
	}
	return out
}

func passConvergence(o *runner.Outcome, _ Monitor) string {
	res := o.Projection
	if len(res.Replicas) < 2 {
		return "a single replica: nothing to compare"
	}
	judged := 0
	for _, p := range res.Replicas[0].Projectors {
		if p.Claimed {
			judged++
		}
	}
	return fmt.Sprintf("%d projector(s) converged on %d replicas", judged, len(res.Replicas))
}

func finalConvergence(o *runner.Outcome, _ Monitor) []Breach {
	res := o.Projection
	if len(res.Replicas) < 2 {
		return nil
	}
	first := res.Replicas[0]
	var details []string
	var diff, culprit string
	judged := 0
	for _, base := range first.Projectors {
		if !base.Claimed {
			continue
		}
		judged++
		for _, rep := range res.Replicas[1:] {
			other, ok := projRun(rep, base.Name)
			if !ok {
				details = append(details, fmt.Sprintf("projector %s did not run on replica %s", base.Name, rep.Name))
				culprit = projOr(culprit, base.Name)
				continue
			}
			if slices.EqualFunc(base.Final, other.Final, func(a, b projector.OrderState) bool { return a == b }) {
				continue
			}
			d := cmp.Diff(base.Final, other.Final)
			if diff == "" {
				diff = d
				details = append(details, fmt.Sprintf("diff below: projector %s on replica %s (-) against replica %s (+)", base.Name, first.Name, rep.Name))
			}
			culprit = projOr(culprit, base.Name)
			details = append(details, fmt.Sprintf("projector %s: replica %s ends %s, replica %s ends %s",
				base.Name, first.Name, projStates(base), rep.Name, projStates(other)))
		}
	}
	if judged == 0 {
		return []Breach{breach(LawConverge, "the target claims no projector to judge", "system.Projection.Projectors is empty: nothing is held to the invariant")}
	}
	if culprit != "" {
		b := breach(LawConverge, fmt.Sprintf("replicas of projector %s diverged", culprit), projCapped(details)...)
		b.Diff = diff
		return []Breach{b}
	}
	return nil
}

func projRun(rep runner.ReplicaRun, name string) (runner.ProjectorRun, bool) {
	for _, r := range rep.Projectors {
		if r.Name == name {
			return r, true
		}
	}
	return runner.ProjectorRun{}, false
}

// projStates renders a projector's final state, order by order.
func projStates(run runner.ProjectorRun) string {
	var parts []string
	for _, st := range run.Final {
		parts = append(parts, fmt.Sprintf("%s=%s after %s", st.OrderID, st.Status, st.Last.ID))
	}
	return strings.Join(parts, ", ")
}
