package corpus_test

import (
	"maps"
	"path/filepath"
	"slices"
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
				p, _ := properties.ByName(c.CaughtBy[m])
				out, verdicts, err := corpus.Judge(c.Scenario, target, []properties.Property{p})
				if err != nil {
					t.Fatalf("%s: %v", m, err)
				}
				if verdicts[0].Pass {
					t.Errorf("%s: mutant %s is no longer caught by %s\n%s", c.Path, m, p.Name, properties.Report(verdicts[0], out, ""))
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
		found := false
		for _, c := range cases {
			found = found || c.CaughtBy[m.Name] == m.KilledBy
		}
		if !found {
			t.Errorf("no corpus file catches mutant %s with %s; seed one with: go run ./cmd/fuzzrun -mutants -corpus corpus/cases", m.Name, m.KilledBy)
		}
	}
}
