package properties_test

import (
	"testing"

	"github.com/idemcheck/idemcheck/impl/system"
	"github.com/idemcheck/idemcheck/properties"
)

// mutantSeed fixes rapid's seed for the mutant table so that the test is
// deterministic: the same seed always draws the same scenarios.
const mutantSeed = 20261121

// maxShrunkSize bounds a shrunk counterexample (steps plus events).
const maxShrunkSize = 12

func sizeOf(r properties.HuntResult) int {
	if r.Scenario == nil {
		return 0
	}
	return r.Scenario.Size()
}

// mutantChecks bounds the scenarios drawn per mutant before it counts as a
// survivor.
const mutantChecks = 2000

// huntedProperty is the property a mutant names, if the properties package
// judges it (the concurrency mutants are the linearizability check's).
func huntedProperty(t *testing.T, m system.Target) (properties.Property, bool) {
	if m.KilledBy == "linearizability" {
		return properties.Property{}, false
	}
	p, ok := properties.ByName(m.KilledBy)
	if !ok {
		t.Fatalf("mutant %s names unknown property %q", m.Name, m.KilledBy)
	}
	return p, true
}

// TestMutantsAreKilled: every mutant is caught by the property it names,
// with a shrunk and reduced counterexample that fails again against the
// mutant, passes the reference, and keeps no part that plays no role.
func TestMutantsAreKilled(t *testing.T) {
	for _, m := range system.Mutants() {
		p, ok := huntedProperty(t, m)
		if !ok {
			continue
		}
		t.Run(m.Name, func(t *testing.T) {
			res := properties.Hunt(m, properties.HuntOptions{Kind: p.Kind, Properties: []properties.Property{p}, Checks: mutantChecks, Seed: mutantSeed})
			if !res.Failed {
				t.Fatalf("mutant %s survived %d checks of %s", m.Name, res.Checks, p.Name)
			}
			if res.Verdict.Property != p.Name {
				t.Fatalf("mutant %s was caught by %q, not by %q: %s", m.Name, res.Verdict.Property, p.Name, res.Message)
			}
			if res.Scenario == nil || res.Scenario.Size() > maxShrunkSize {
				t.Fatalf("mutant %s: counterexample missing or not shrunk (size %d > %d)", m.Name, sizeOf(res), maxShrunkSize)
			}
			keep := properties.StillFails(m, []properties.Property{p}, res.Law)
			if !keep(res.Scenario) {
				t.Fatalf("mutant %s: the counterexample does not fail %s again against the mutant, or the reference fails it too", m.Name, res.Law)
			}
			if part := properties.Removable(res.Scenario, keep); part != "" {
				t.Fatalf("mutant %s: the counterexample still fails %s without its %s: not reduced", m.Name, res.Law, part)
			}
			t.Logf("%s killed by %s after %d checks in %v; shrunk to size %d, reduced to %d\n%s", m.Name, res.Law, res.Checks, res.Elapsed,
				res.ShrunkSize, res.Scenario.Size(), properties.Report(res.Verdict, res.Outcome, properties.ReportOptions{}))
		})
	}
}
