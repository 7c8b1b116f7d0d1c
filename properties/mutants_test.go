package properties_test

import (
	"testing"

	"github.com/idemcheck/idemcheck/faults/runner"
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

// TestMutantsAreKilled: every mutant is caught by the property it names,
// with a shrunk counterexample.
func TestMutantsAreKilled(t *testing.T) {
	for _, m := range system.Mutants() {
		t.Run(m.Name, func(t *testing.T) {
			p, ok := properties.ByName(m.KilledBy)
			if !ok {
				t.Fatalf("mutant %s names unknown property %q", m.Name, m.KilledBy)
			}
			res := properties.Hunt(m, properties.HuntOptions{Kind: p.Kind, Properties: []properties.Property{p}, Checks: mutantChecks, Seed: mutantSeed})
			if !res.Failed {
				t.Fatalf("mutant %s survived %d checks of %s", m.Name, res.Checks, p.Name)
			}
			if res.Verdict.Property != p.Name {
				t.Fatalf("mutant %s was caught by %q, not by %q: %s", m.Name, res.Verdict.Property, p.Name, res.Message)
			}
			// The counterexample is shrunk, replays, and blames the mutant:
			// the same scenario fails against it and passes the reference.
			if res.Scenario == nil || res.Scenario.Size() > maxShrunkSize {
				t.Fatalf("mutant %s: counterexample missing or not shrunk (size %d > %d)", m.Name, sizeOf(res), maxShrunkSize)
			}
			again, err := runner.Run(res.Scenario, m)
			if err != nil || p.Check(again).Pass {
				t.Fatalf("mutant %s: the shrunk scenario does not fail again (err %v)", m.Name, err)
			}
			ref, err := runner.Run(res.Scenario, system.Reference())
			if err != nil {
				t.Fatal(err)
			}
			for _, q := range properties.ForKind(p.Kind) {
				if v := q.Check(ref); !v.Pass {
					t.Fatalf("the reference fails %s on mutant %s's counterexample: %s", q.Name, m.Name, v)
				}
			}
			t.Logf("%s killed by %s after %d checks in %v; shrunk scenario size %d\n%s", m.Name, p.Name, res.Checks, res.Elapsed, res.Scenario.Size(),
				properties.Report(res.Verdict, res.Outcome, ""))
		})
	}
}
