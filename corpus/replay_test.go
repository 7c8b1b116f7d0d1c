package corpus_test

import (
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/idemcheck/idemcheck/corpus"
	"github.com/idemcheck/idemcheck/impl/system"
	"github.com/idemcheck/idemcheck/properties"
)

// casesDir is the committed regression corpus.
const casesDir = "cases"

// TestCorpusReplays replays every corpus file: the reference must pass every
// property of the scenario's kind (a failure is an open bug or a false
// alarm), and every mutant the file lists in caughtBy must fail the
// recorded property.
func TestCorpusReplays(t *testing.T) {
	cases, err := corpus.LoadDir(casesDir)
	if err != nil {
		t.Fatal(err)
	}
	if len(cases) == 0 {
		t.Fatalf("no corpus files in %s", casesDir)
	}
	for _, c := range cases {
		t.Run(filepath.Base(c.Path), func(t *testing.T) {
			_, verdicts, err := corpus.Judge(c.Scenario, system.Reference(), nil)
			if err != nil {
				t.Fatalf("reference: %v", err)
			}
			for _, v := range verdicts {
				if !v.Pass {
					t.Errorf("%s: the reference fails %s", c.Path, v)
				}
			}
			for _, m := range slices.Sorted(maps.Keys(c.CaughtBy)) {
				target, ok := system.Lookup(m)
				if !ok {
					t.Fatalf("%s: caughtBy names unknown mutant %q", c.Path, m)
				}
				name, law, _ := strings.Cut(c.CaughtBy[m], "/")
				p, _ := properties.ByName(name)
				out, verdicts, err := corpus.Judge(c.Scenario, target, []properties.Property{p})
				if err != nil {
					t.Fatalf("%s: %v", m, err)
				}
				v := verdicts[0]
				if v.Pass || (law != "" && !slices.ContainsFunc(v.Breaches, func(b properties.Breach) bool { return b.Law == law })) {
					t.Errorf("%s: mutant %s is no longer caught by %s\n%s", c.Path, m, c.CaughtBy[m], properties.Report(v, out, properties.ReportOptions{}))
				}
			}
		})
	}
}

// TestEveryMutantHasACorpusCase: the corpus holds a counterexample for every
// mutant, caught by the property the mutant names, so that a regression in
// any property shows up in the replay without a search.
func TestEveryMutantHasACorpusCase(t *testing.T) {
	cases, err := corpus.LoadDir(casesDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range system.Mutants() {
		if m.KilledBy == "linearizability" {
			continue // the linearizability check's; it replays no scenario
		}
		found := false
		for _, c := range cases {
			name, _, _ := strings.Cut(c.CaughtBy[m.Name], "/")
			found = found || name == m.KilledBy
		}
		if !found {
			t.Errorf("no corpus file catches mutant %s with %s; seed one with: go run ./cmd/fuzzrun mutants -corpus corpus/cases", m.Name, m.KilledBy)
		}
	}
}

// TestCorpusCasesAreReduced: every case still breaks its law against the
// target it was found against, and no consumer group, worker, node, event,
// step, replica or delivery of it can be removed with the case still
// failing (and, for a mutant, the reference still passing): the corpus
// holds minimal counterexamples, not merely shrunk ones.
func TestCorpusCasesAreReduced(t *testing.T) {
	cases, err := corpus.LoadDir(casesDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		t.Run(filepath.Base(c.Path), func(t *testing.T) {
			target, ok := system.Lookup(c.Target)
			if !ok {
				t.Skipf("found against %s, which is not a built-in target", c.Target)
			}
			if c.Law == "" {
				t.Fatalf("%s records no law (a version 1 case): regenerate it", c.Path)
			}
			keep := properties.StillFails(target, nil, c.LawID())
			if !keep(c.Scenario) {
				t.Fatalf("%s no longer breaks %s against %s", c.Path, c.LawID(), c.Target)
			}
			if part := properties.Removable(c.Scenario, keep); part != "" {
				t.Errorf("%s still breaks %s without its %s: reduce it (go run ./cmd/fuzzrun mutants regenerates the cases)", c.Path, c.LawID(), part)
			}
		})
	}
}
