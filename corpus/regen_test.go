package corpus_test

import (
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/idemcheck/idemcheck/corpus"
	"github.com/idemcheck/idemcheck/impl/system"
	"github.com/idemcheck/idemcheck/internal/regen"
	"github.com/idemcheck/idemcheck/properties"
)

// TestRenameCases gives the cases of corpus/cases canonical names
// (properties.Canonical) where the renamed scenario still breaks its law
// against its target, the reference still passes it and it catches the
// same mutants; each renamed case is saved under its new name, its trace
// played anew, and the old file goes:
// IDEMCHECK_REGENERATE=1 go test ./corpus -run TestRenameCases
func TestRenameCases(t *testing.T) {
	if !regen.Enabled(t) {
		return
	}
	cases, err := corpus.LoadDir(casesDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		renamed := properties.Canonical(c.Scenario)
		if renamed == nil {
			continue
		}
		target, ok := system.Lookup(c.Target)
		if !ok {
			t.Errorf("%s: unknown target %q", c.Path, c.Target)
			continue
		}
		out, verdicts, err := corpus.Judge(renamed, target, nil)
		if err != nil {
			t.Errorf("%s: %v", c.Path, err)
			continue
		}
		var broke *properties.Verdict
		for i, v := range verdicts {
			if v.Property == c.Property && slices.ContainsFunc(v.Breaches, func(b properties.Breach) bool { return b.Law == c.Law }) {
				broke = &verdicts[i]
			}
		}
		if broke == nil {
			t.Logf("%s: renamed, it no longer breaks %s/%s: kept", c.Path, c.Property, c.Law)
			continue
		}
		_, ref, err := corpus.Judge(renamed, system.Reference(), nil)
		if err != nil || slices.ContainsFunc(ref, func(v properties.Verdict) bool { return !v.Pass }) {
			t.Logf("%s: renamed, the reference fails it: kept", c.Path)
			continue
		}
		caught, err := corpus.Catches(renamed)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(slices.Sorted(maps.Keys(caught)), slices.Sorted(maps.Keys(c.CaughtBy))) {
			t.Logf("%s: renamed, it catches %v instead of %v: kept", c.Path, slices.Sorted(maps.Keys(caught)), slices.Sorted(maps.Keys(c.CaughtBy)))
			continue
		}
		n := &corpus.Case{Property: c.Property, Law: c.Law, Target: c.Target, Summary: broke.Summary, CaughtBy: caught,
			Seed: c.Seed, Trace: out.Trace.Lines(), Scenario: renamed}
		if err := os.Remove(c.Path); err != nil {
			t.Fatal(err)
		}
		path, _, err := corpus.Write(filepath.Dir(c.Path), n)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s -> %s", filepath.Base(c.Path), filepath.Base(path))
	}
}
