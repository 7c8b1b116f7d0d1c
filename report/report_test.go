package report_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/idemcheck/idemcheck/faults/scenario"
	"github.com/idemcheck/idemcheck/impl/system"
	"github.com/idemcheck/idemcheck/properties"
	"github.com/idemcheck/idemcheck/properties/coverage"
	"github.com/idemcheck/idemcheck/report"
)

// huntSeed fixes the hunts below: the same seed draws the same scenarios,
// so the counterexamples (and the assertions on them) are deterministic.
const huntSeed = 20261121

// killCase hunts the named mutant with its own property and returns the
// shrunk counterexample as a report case.
func killCase(t *testing.T, mutant string) report.Case {
	t.Helper()
	m, ok := system.Lookup(mutant)
	if !ok {
		t.Fatalf("no mutant %q", mutant)
	}
	p, ok := properties.ByName(m.KilledBy)
	if !ok {
		t.Fatalf("mutant %s names unknown property %q", mutant, m.KilledBy)
	}
	res := properties.Hunt(m, properties.HuntOptions{Kind: p.Kind, Properties: []properties.Property{p}, Checks: 2000, Seed: huntSeed})
	if !res.Failed || res.Outcome == nil {
		t.Fatalf("mutant %s survived %d checks", mutant, res.Checks)
	}
	out, verdicts, err := properties.Judge(res.Scenario, m, nil)
	if err != nil {
		t.Fatal(err)
	}
	return report.Case{Title: p.Name + " against " + mutant, Property: p.Name, Target: mutant, Seed: res.Seed,
		Verdicts: verdicts, CorpusFile: "corpus/cases/example.json", New: true, Replay: "go run ./cmd/fuzzrun replay x", Outcome: out}
}

// sampleRun is a run with a consumption and a projection counterexample.
func sampleRun(t *testing.T) *report.Run {
	t.Helper()
	r := &report.Run{Title: "fuzzrun report", Mode: "campaign", Target: "no-dedup", Seed: 7, Workers: 2, Budget: "2s", Checks: 1234}
	for _, p := range properties.All() {
		row := report.PropertyRow{Name: p.Name, Invariant: p.Invariant, Kind: string(p.Kind), Doc: p.Doc, Checks: 617, Status: "pass"}
		if p.Name == "single-credit" {
			row.Violations, row.Status = 1, "violated"
		}
		r.Properties = append(r.Properties, row)
	}
	r.Cases = append(r.Cases, killCase(t, "no-dedup"), killCase(t, "timestamp-lww-projector"))
	return r
}

func render(t *testing.T, r *report.Run) string {
	t.Helper()
	var b bytes.Buffer
	if err := report.Render(&b, r); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// The page holds, for a consumption counterexample, a lane per worker and
// the lanes of the world, and a chip per action; for a projection one, a
// lane per node and the replicas' final states.
func TestRenderHasTimelines(t *testing.T) {
	r := sampleRun(t)
	html := render(t, r)
	cons := r.Cases[0].Outcome.Consumption
	for _, w := range cons.Config.Workers {
		if !strings.Contains(html, `<th class="lane-head worker" data-lane="`+w.Name+`"`) {
			t.Errorf("no lane for worker %s", w.Name)
		}
	}
	for _, l := range []string{"broker", "clock", "ledger"} {
		if !strings.Contains(html, `data-lane="`+l+`"`) {
			t.Errorf("no %s lane", l)
		}
	}
	if got, want := strings.Count(html, `<table class="timeline" data-kind="consumption"`), 1; got != want {
		t.Errorf("%d consumption timelines, want %d", got, want)
	}
	if got, want := strings.Count(html, `<table class="timeline" data-kind="projection"`), 1; got != want {
		t.Errorf("%d projection timelines, want %d", got, want)
	}
	if got := strings.Count(html, `data-kind="ledger-write"`); got < 2 {
		t.Errorf("%d ledger writes drawn; no-dedup's counterexample credits twice", got)
	}
	for _, want := range []string{`class="flagged"`, `data-property="single-credit" data-status="violated"`, "FAIL single-credit", `class="grid replicas"`, "timestamp-lww"} {
		if !strings.Contains(html, want) {
			t.Errorf("page lacks %q", want)
		}
	}
}

// A projection counterexample marks the replicas whose projector ended an
// order wrong.
func TestRenderMarksWrongFinalState(t *testing.T) {
	c := killCase(t, "timestamp-lww-projector")
	html := render(t, &report.Run{Title: "t", Mode: "replay", Cases: []report.Case{c}})
	if !strings.Contains(html, `class="wrong"`) {
		t.Error("no final state is marked wrong")
	}
}

// WriteFile leaves the page complete and nothing else behind.
func TestWriteFileIsAtomic(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "sub", "report.html")
	r := &report.Run{Title: "empty run", Mode: "campaign"}
	for range 2 { // the second write replaces the first
		if err := report.WriteFile(path, r); err != nil {
			t.Fatal(err)
		}
	}
	entries, err := os.ReadDir(filepath.Dir(path))
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 || entries[0].Name() != "report.html" {
		t.Fatalf("directory holds %v, want only report.html", entries)
	}
	data, _ := os.ReadFile(path)
	if !strings.HasSuffix(strings.TrimSpace(string(data)), "</html>") {
		t.Fatal("page is incomplete")
	}
}

// The coverage table lists every situation of a kind that was run, marks
// the ones never reached and says why the run failed on them.
func TestRenderCoverageTable(t *testing.T) {
	var c coverage.Counts
	for range 3 {
		c.AddRun(scenario.KindConsumption, coverage.Set(0).With(coverage.PoisonToDLQ))
	}
	html := render(t, &report.Run{Title: "t", Mode: "campaign", Coverage: c.Rows(), CoverageFailure: "coverage: never reached crash-after-claim"})
	for _, want := range []string{`id="coverage"`, `data-situation="poison-to-dlq" data-missing="false"`,
		`data-situation="crash-after-claim" data-missing="true"`, "never reached crash-after-claim", "some situations were never reached"} {
		if !strings.Contains(html, want) {
			t.Errorf("the page lacks %s", want)
		}
	}
	if strings.Contains(html, `data-situation="hlc-clock-step-back"`) {
		t.Error("a projection situation is listed though no projection run was made")
	}
}
