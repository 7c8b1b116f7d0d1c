package properties

import (
	"slices"
	"strings"
	"testing"

	"github.com/idemcheck/idemcheck/faults/runner"
	"github.com/idemcheck/idemcheck/faults/scenario"
	"github.com/idemcheck/idemcheck/impl/contract/broker"
	"github.com/idemcheck/idemcheck/impl/contract/store"
	"github.com/idemcheck/idemcheck/impl/system"
	"github.com/idemcheck/idemcheck/properties/coverage"
)

// The coverage rule: a law checked on coverage.MinChecks scenarios or more
// fails when its scenarios never reached a situation its target can reach.
// Two things keep the verdict from depending on anything but what was
// played:
//
//   - It is judged only on a number of scenarios fixed in advance
//     (Options.Checks, rapid's -rapid.checks, a campaign's -checks with no
//     time limit), never on as many as a time budget fits: a free machine
//     fits more than 10,000 scenarios in the 3 s a busy one fills with
//     5,000, and would fail a store the busy one passes.
//   - What a target cannot reach is told apart from what its scenarios
//     missed by the target alone, not by how many scenarios were drawn:
//     what its store's declared conventions rule out, and the cleanup
//     situations of a store that offers no retention at all, found by one
//     fixed scenario (offersRetention).

// fixed reports whether the number of scenarios a budget plays is fixed in
// advance, the same on every machine: a count, not a time.
func (b budget) fixed() bool { return b.single || b.checks > 0 }

// judgeCoverage is the coverage rule at the end of a clean check of b's
// budget against target: an error if judged and failed, a note in the log
// if not judged but situations were missed.
func judgeCoverage(t lawT, target system.Target, tt *testing.T, b budget, counts coverage.Counts) {
	t.Helper()
	missing := counts.Missing()
	if len(missing) == 0 {
		return
	}
	if !b.fixed() {
		t.Logf("coverage not judged (the scenarios were as many as the time budget fitted, which depends on the machine; give Options.Checks of %d or more to judge it): never reached %s",
			coverage.MinChecks, situationNames(missing))
		return
	}
	if f := counts.FailureExcept(unreachable(tt, target, missing)); f != "" {
		t.Error(f)
	}
}

func situationNames(ss []coverage.Situation) string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = s.Name
	}
	return strings.Join(out, ", ")
}

// Unreachable names the situations target cannot reach, each with why:
// those its store's declared conventions rule out, and the cleanup
// situations when its store offers no retention at all (its Cleanup
// removes nothing in a scenario built to give it a record past the
// retention window). A campaign or a check that never reached one of them
// is not faulted for it. It plays one scenario against target (outside
// any testing/synctest bubble: a store that reads time.Now is taken to
// offer retention).
func Unreachable(target system.Target) map[string]string {
	return unreachable(nil, target, coverage.ForKind(scenario.KindConsumption))
}

// cleanupSituations are the situations only a cleanup that removes a
// record can reach.
var cleanupSituations = []string{coverage.CleanupWhileRedeliveryPending, coverage.CleanupReclaimStaleCommit}

// unreachable is Unreachable for a check that may play in t's bubbles,
// probing the store's retention only if a cleanup situation is among
// missing.
func unreachable(t *testing.T, target system.Target, missing []coverage.Situation) map[string]string {
	c := target.Consumption
	if c == nil {
		return nil
	}
	out := declaredUnreachable(c.Conventions)
	probe := slices.ContainsFunc(missing, func(s coverage.Situation) bool {
		_, excused := out[s.Name]
		return !excused && slices.Contains(cleanupSituations, s.Name)
	})
	if probe && !offersRetention(t, target) {
		for _, name := range cleanupSituations {
			out[name] = "the store offers no retention: its Cleanup removed nothing of a record settled past the retention window"
		}
	}
	return out
}

// declaredUnreachable names the situations the conventions conv rule out,
// and why.
func declaredUnreachable(conv store.Conventions) map[string]string {
	out := map[string]string{}
	if conv.Expiry == store.ExpiryByLibrary {
		for _, name := range cleanupSituations {
			out[name] = "the store expires its records itself: no cleanup removes one"
		}
	}
	if conv.Lease == store.LeaseNone {
		why := "the store's mark has no lease: it is never taken over, and its holder's token goes stale only once the mark expired"
		for _, name := range []string{coverage.TakeoverAfterLeaseExpiry, coverage.TakeoverThenStaleRelease, coverage.StaleCommitRefused, coverage.CleanupReclaimStaleCommit} {
			if _, ok := out[name]; !ok {
				out[name] = why
			}
		}
	}
	return out
}

// retentionProbe is a scenario that gives a store's Cleanup a settled
// record past the retention window: one event produced, claimed, handled,
// committed and acked; the retention passes; the retention job runs.
func retentionProbe() *scenario.Scenario {
	const retention = 10_000
	steps := []scenario.Step{{Op: scenario.OpProduce, Event: 0}, {Op: scenario.OpDeliver, Worker: "w1"}}
	for range 6 { // claim, handle, commit, ack, and spares: a step of an idle worker does nothing
		steps = append(steps, scenario.Step{Op: scenario.OpRun, Worker: "w1"})
	}
	steps = append(steps, scenario.Step{Op: scenario.OpAdvance, Ms: retention}, scenario.Step{Op: scenario.OpCleanup, Worker: "w1"})
	return &scenario.Scenario{Version: scenario.Version, Kind: scenario.KindConsumption, Consumption: &scenario.Consumption{
		Config: scenario.Config{
			Topic: "orders", Consumers: []string{"ledger"}, Nodes: []scenario.Node{{Name: "n1"}},
			Workers: []scenario.Worker{{Name: "w1", Consumer: "ledger", Node: "n1"}},
			Policy:  broker.Policy{MaxAttempts: 2, BackoffMs: 200, MaxBackoffMs: 800, AckTimeoutMs: 1_000},
			LeaseMs: 200, RetentionMs: retention,
		},
		Events: []scenario.Event{{ID: "evt-0001", OrderID: "ord-1", UserID: "usr-1", AmountCents: 100}},
		Steps:  steps,
	}}
}

// offersRetention reports whether target's store offers retention: its
// Cleanup removed the record of the retention probe. A probe that cannot
// be played says yes, so that nothing is excused on its account.
func offersRetention(t *testing.T, target system.Target) bool {
	out, err := play(t, retentionProbe(), target, nil)
	if err != nil || out == nil || out.Consumption == nil {
		return true
	}
	for _, a := range out.Consumption.Actions {
		if a.Kind == runner.ActCleanup && len(a.Removed) > 0 {
			return true
		}
	}
	return false
}
