package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/idemcheck/idemcheck/corpus"
	"github.com/idemcheck/idemcheck/impl/system"
)

// The mutation benchmark, narrowed to the mutants one property kills:
// every one is killed in every run, and its smallest counterexample is
// saved and catches it.
func TestMutantsBenchmark(t *testing.T) {
	dir := t.TempDir()
	html := filepath.Join(dir, "m.html")
	r := fuzzrun(t, "mutants", "-property", "bounded-attempts", "-runs", "2", "-workers", "2",
		"-corpus", filepath.Join(dir, "corpus"), "-html", html, "-json")
	if r.code != exitOK {
		t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	rep := decode[mutantsJSON](t, r)
	want := 0
	for _, m := range system.Mutants() {
		if m.KilledBy == "bounded-attempts" {
			want++
		}
	}
	if len(rep.Mutants) != want || want == 0 || rep.Runs != 2 || rep.Seed != defaultMutantSeed || len(rep.Goals) == 0 {
		t.Fatalf("report %+v, want %d mutants", rep, want)
	}
	for _, m := range rep.Mutants {
		if m.Killed != 2 || m.Runs != 2 || m.MedianChecks == 0 || m.Size == 0 || m.CorpusFile == "" {
			t.Errorf("mutant row %+v", m)
			continue
		}
		c, err := corpus.Load(m.CorpusFile)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(c.CaughtBy[m.Mutant], "bounded-attempts/") {
			t.Errorf("%s: caughtBy %v lacks %s", m.CorpusFile, c.CaughtBy, m.Mutant)
		}
	}
	page, err := os.ReadFile(html)
	if err != nil {
		t.Fatal(err)
	}
	mustContain(t, "report", string(page), `id="mutants"`, "every one of", `class="timeline"`)
}

// The table is the human form of the same.
func TestMutantsTable(t *testing.T) {
	r := fuzzrun(t, "mutants", "-property", "producer-gate", "-runs", "1", "-corpus", "", "-html", "")
	if r.code != exitOK {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	mustContain(t, "table", r.stdout, "mutant", "killed by", "median checks", "producer-gate-missing", "1/1", "goal: every mutant killed in every hunt: met")
}
