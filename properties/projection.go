package properties

import (
	"fmt"
	"slices"
	"strings"

	"github.com/google/go-cmp/cmp"
	"github.com/idemcheck/idemcheck/faults/runner"
	"github.com/idemcheck/idemcheck/faults/scenario"
	"github.com/idemcheck/idemcheck/impl/contract/hlc"
	"github.com/idemcheck/idemcheck/model/hlclaw"
)

func init() {
	register(Property{Name: "skew-safe-final-state", Invariant: 7, Kind: scenario.KindProjection,
		Doc:   "every projector the target claims correct ends each order in the state its causal history ends in, whatever the clock skew and delivery order (the timestamp baseline is shown failing)",
		Check: checkSkewSafeFinalState})
	register(Property{Name: "hlc-laws", Invariant: 8, Kind: scenario.KindProjection,
		Doc:   "every node's HLC is monotonic (also across clock steps backwards), a merge is later than the stamp received, stamps are never behind the physical clock and carry their node, and causally later events have later stamps",
		Check: checkHLCLaws})
	register(Property{Name: "replica-convergence", Invariant: 9, Kind: scenario.KindProjection,
		Doc:   "replicas of a claimed projector that saw the same events, in any order and with any duplicates, end in the same state",
		Check: checkReplicaConvergence})
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

func checkSkewSafeFinalState(o *runner.Outcome) Verdict {
	const name = "skew-safe-final-state"
	res := o.Projection
	if res == nil {
		return fail(name, "the run has no projection result")
	}
	var details, notes []string
	var diff, culprit string
	judged := 0
	for _, rep := range res.Replicas {
		for _, run := range rep.Projectors {
			got := run.Statuses()
			d := cmp.Diff(res.Expected, got)
			if !run.Claimed {
				if d != "" {
					notes = append(notes, fmt.Sprintf("baseline %s on replica %s ends wrong, as it is known to: %s", run.Name, rep.Name, projWrongOrders(res.Expected, got)))
				}
				continue
			}
			judged++
			if d == "" {
				continue
			}
			if culprit == "" {
				culprit, diff = run.Name, d
				details = append(details, fmt.Sprintf("diff below: the model (-want) against projector %s on replica %s (+got)", run.Name, rep.Name))
			}
			for _, id := range projSortedKeys(res.Expected, got) {
				if got[id] != res.Expected[id] {
					details = append(details, fmt.Sprintf("replica %s, projector %s: order %s ends %s (last applied %s), but its causal history ends %s: %s",
						rep.Name, run.Name, id, projOr(got[id], "absent"), projLastApplied(run, id), projOr(res.Expected[id], "absent"), projChain(res, id)))
				}
			}
		}
	}
	if judged == 0 {
		return fail(name, "the target claims no projector to judge", "system.Projection.Projectors is empty: nothing is held to the invariant")
	}
	if culprit != "" {
		v := fail(name, fmt.Sprintf("projector %s ended an order off its causally correct state", culprit), projCapped(append(details, notes...))...)
		v.Diff = diff
		return v
	}
	v := pass(name, fmt.Sprintf("%d projector run(s) ended every order in its causally correct state", judged))
	v.Details = projCapped(notes)
	return v
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
	return hlclaw.Stamp{WallMs: t.WallMs, Logical: t.Logical, Node: t.Node}
}

func checkHLCLaws(o *runner.Outcome) Verdict {
	const name = "hlc-laws"
	res := o.Projection
	if res == nil {
		return fail(name, "the run has no projection result")
	}
	readings := make([]hlclaw.Reading, len(res.Readings))
	for i, r := range res.Readings {
		readings[i] = hlclaw.Reading{
			Node: r.Node, Op: r.Op, PhysMs: r.PhysMs, WallChangeMs: r.WallChangeMs,
			HasPrev: r.HasPrev, Prev: projStamp(r.Prev), Remote: projStamp(r.Remote), Got: projStamp(r.Got),
		}
	}
	emissions := make([]hlclaw.Emission, len(res.Events))
	pairs := 0
	for i, e := range res.Events {
		emissions[i] = hlclaw.Emission{Event: e.Event.ID, Stamp: projStamp(e.Event.HLC), Past: e.CausalPast}
		pairs += len(e.CausalPast)
	}
	violations := append(hlclaw.CheckReadings(readings), hlclaw.CheckCausality(emissions)...)
	if len(violations) == 0 {
		return pass(name, fmt.Sprintf("%d HLC reading(s) and %d causal pair(s) obey every law", len(readings), pairs))
	}
	var details []string
	for _, v := range violations {
		// Readings are located by the step that asked for them, causality
		// by the later event of the pair.
		var where string
		if v.Law == hlclaw.Causality {
			where = "event " + res.Events[v.Index].Event.ID
		} else {
			where = fmt.Sprintf("step %d", res.Readings[v.Index].Step+1)
		}
		details = append(details, fmt.Sprintf("%s (%s): %s", v.Law, where, v.Detail))
	}
	first := violations[0]
	verdict := fail(name, fmt.Sprintf("hlc law %s broken", first.Law), projCapped(details)...)
	if first.Law != hlclaw.Causality {
		// What a correct clock would have answered the same inputs shows the
		// bug better than the law alone.
		r := readings[first.Index]
		want := hlclaw.Tick(r.Node, r.Prev, r.PhysMs)
		if r.Op == hlclaw.OpMerge {
			want = hlclaw.Merge(r.Node, r.Prev, r.Remote, r.PhysMs)
		}
		verdict.Details = append(verdict.Details, fmt.Sprintf("diff below: the canonical HLC (-want) against the implementation (+got) given the same inputs at step %d", res.Readings[first.Index].Step+1))
		verdict.Diff = cmp.Diff(want, r.Got)
	}
	return verdict
}

func checkReplicaConvergence(o *runner.Outcome) Verdict {
	const name = "replica-convergence"
	res := o.Projection
	if res == nil {
		return fail(name, "the run has no projection result")
	}
	if len(res.Replicas) < 2 {
		return pass(name, "a single replica: nothing to compare")
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
			d := cmp.Diff(base.Final, other.Final)
			if d == "" {
				continue
			}
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
		return fail(name, "the target claims no projector to judge", "system.Projection.Projectors is empty: nothing is held to the invariant")
	}
	if culprit != "" {
		v := fail(name, fmt.Sprintf("replicas of projector %s diverged", culprit), projCapped(details)...)
		v.Diff = diff
		return v
	}
	return pass(name, fmt.Sprintf("%d projector(s) converged on %d replicas", judged, len(res.Replicas)))
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
