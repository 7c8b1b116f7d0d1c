package main

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/corpus"
	"github.com/idemcheck/idemcheck/properties"
	"github.com/idemcheck/idemcheck/properties/coverage"
)

// A campaign against the reference finds nothing, spends its whole check
// budget across both workers, judges every property, and writes the HTML
// report and nothing in the corpus.
func TestCampaignAgainstReference(t *testing.T) {
	dir := t.TempDir()
	html := filepath.Join(dir, "report.html")
	r := fuzzrun(t, "-duration", "0", "-checks", "600", "-workers", "2", "-batch", "100", "-seed", "3",
		"-corpus", filepath.Join(dir, "corpus"), "-html", html, "-json")
	if r.code != exitOK {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	keys := decode[map[string]any](t, r)
	for _, k := range []string{"mode", "target", "seed", "workers", "duration", "elapsedMs", "checks", "checksPerSecond",
		"interrupted", "properties", "violations", "coverage", "html", "exit"} {
		if _, ok := keys[k]; !ok {
			t.Errorf("JSON report lacks %q", k)
		}
	}
	rep := decode[campaignJSON](t, r)
	if rep.Checks != 600 || rep.Workers != 2 || rep.Seed != 3 || rep.Target != "reference" || len(rep.Violations) != 0 || rep.Exit != 0 {
		t.Fatalf("report %+v", rep)
	}
	if len(rep.Properties) != len(properties.All()) {
		t.Fatalf("%d property rows, want %d", len(rep.Properties), len(properties.All()))
	}
	if len(rep.Coverage) != len(coverage.All()) || rep.CoverageFailure != "" {
		t.Fatalf("%d coverage rows (want %d), failure %q: 600 checks are too few to be judged", len(rep.Coverage), len(coverage.All()), rep.CoverageFailure)
	}
	for _, p := range rep.Properties {
		if p.Status != "pass" || p.Checks == 0 {
			t.Errorf("property %s: status %s after %d checks", p.Name, p.Status, p.Checks)
		}
	}
	if got := files(t, filepath.Join(dir, "corpus")); len(got) != 0 {
		t.Errorf("corpus holds %v after a clean campaign", got)
	}
	page, err := os.ReadFile(html)
	if err != nil {
		t.Fatal(err)
	}
	mustContain(t, "report", string(page), "no violation found", `data-property="single-credit" data-status="pass"`, `id="coverage"`,
		`data-situation="takeover-then-stale-release"`)
}

// A campaign of coverage.MinChecks checks that never reaches a situation
// fails, though nothing was violated: with crashes switched off, every
// crash situation is missing, the campaign exits 1, and the text, JSON and
// HTML reports say why.
func TestCampaignFailsOnSituationNeverReached(t *testing.T) {
	dir := t.TempDir()
	html := filepath.Join(dir, "r.html")
	args := []string{"-duration", "0", "-checks", "10000", "-workers", "2", "-seed", "5", "-property", "single-credit",
		"-corpus", "", "-html", html, "-weights", "crash=0"}
	r := fuzzrun(t, append(args, "-json")...)
	if r.code != exitViolation {
		t.Fatalf("exit %d, want %d\n%s", r.code, exitViolation, r.stderr)
	}
	rep := decode[campaignJSON](t, r)
	if len(rep.Violations) != 0 || !strings.Contains(rep.CoverageFailure, "crash-after-claim") || rep.Exit != exitViolation {
		t.Fatalf("violations %d, coverage failure %q, exit %d", len(rep.Violations), rep.CoverageFailure, rep.Exit)
	}
	for _, row := range rep.Coverage {
		if row.Missing != strings.HasPrefix(row.Name, "crash-") {
			t.Errorf("situation %s: missing=%t after 10000 checks without crashes (reached %d)", row.Name, row.Missing, row.Reached)
		}
	}
	page, err := os.ReadFile(html)
	if err != nil {
		t.Fatal(err)
	}
	mustContain(t, "report", string(page), `data-situation="crash-after-claim" data-missing="true"`, "never reached crash-before-claim")
	text := fuzzrun(t, args...)
	if text.code != exitViolation {
		t.Fatalf("exit %d, want %d", text.code, exitViolation)
	}
	mustContain(t, "summary", text.stdout, "crash-after-commit", "<- never reached", "never reached crash-before-claim", "the campaign fails")
}

// A campaign bounded by time is not judged on coverage, however many
// checks the machine fitted in it, so that its verdict does not depend on
// the machine's speed: with crashes switched off it passes, and the
// summary says what would judge it.
func TestTimedCampaignCoverageIsNotJudged(t *testing.T) {
	args := []string{"-duration", "2s", "-workers", "1", "-seed", "5", "-property", "single-credit", "-corpus", "", "-html", "", "-weights", "crash=0"}
	r := fuzzrun(t, append(args, "-json")...)
	if r.code != exitOK {
		t.Fatalf("exit %d, want %d\n%s", r.code, exitOK, r.stderr)
	}
	rep := decode[campaignJSON](t, r)
	if rep.CoverageFailure != "" {
		t.Fatalf("coverage failure %q under a time budget", rep.CoverageFailure)
	}
	text := fuzzrun(t, args...)
	if text.code != exitOK {
		t.Fatalf("exit %d, want %d", text.code, exitOK)
	}
	mustContain(t, "summary", text.stdout, "<- never reached", "-duration 0 -checks 10000", "no violation found.")
}

// The human summary is a table of the properties.
func TestCampaignSummaryTable(t *testing.T) {
	r := fuzzrun(t, "campaign", "-duration", "0", "-checks", "100", "-workers", "1", "-seed", "4", "-property", "hlc-laws", "-corpus", "", "-html", "")
	if r.code != exitOK {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	mustContain(t, "summary", r.stdout, "campaign against reference", "property", "hlc-laws", "100", "pass", "no violation found.")
	mustContain(t, "progress", r.stderr, "fuzzrun: campaign against reference, seed 4, 1 worker(s)")
}

// A campaign against a mutant finds the bug, exits 1, and saves the shrunk
// counterexample once, with the seed, the trace and the mutants it catches.
func TestCampaignAgainstMutantSavesCounterexample(t *testing.T) {
	dir := t.TempDir()
	cdir := filepath.Join(dir, "corpus")
	args := []string{"-target", "no-dedup", "-property", "single-credit", "-duration", "0", "-checks", "200",
		"-workers", "2", "-seed", "1", "-corpus", cdir, "-html", filepath.Join(dir, "r.html"), "-json"}
	r := fuzzrun(t, args...)
	if r.code != exitViolation {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	rep := decode[campaignJSON](t, r)
	if len(rep.Violations) == 0 || rep.Properties[0].Status != "violated" {
		t.Fatalf("report %+v", rep)
	}
	v := rep.Violations[0]
	if v.Property != "single-credit" || v.CorpusFile == "" || !v.New || v.Size == 0 || len(v.Trace) == 0 ||
		!strings.Contains(v.Replay, "fuzzrun replay "+v.CorpusFile+" -target no-dedup") {
		t.Fatalf("violation %+v", v)
	}
	c, err := corpus.Load(v.CorpusFile)
	if err != nil {
		t.Fatal(err)
	}
	// Both workers find it; the file keeps the seed of whichever saved it first.
	seedFound := slices.ContainsFunc(rep.Violations, func(v violationJSON) bool { return v.Seed == c.Seed })
	if c.Target != "no-dedup" || !strings.HasPrefix(c.CaughtBy["no-dedup"], "single-credit/") || !seedFound || len(c.Trace) == 0 {
		t.Fatalf("corpus case %s: target %s, caught by %v, seed %d, %d trace lines", c.Path, c.Target, c.CaughtBy, c.Seed, len(c.Trace))
	}
	saved := files(t, cdir)
	before, _ := os.ReadFile(v.CorpusFile)

	// The same campaign again: the counterexample is known, nothing is
	// written or overwritten.
	again := decode[campaignJSON](t, fuzzrun(t, args...))
	for _, v := range again.Violations {
		if v.New {
			t.Errorf("second run reports %s as new", v.CorpusFile)
		}
	}
	if got := files(t, cdir); !slices.Equal(got, saved) {
		t.Fatalf("corpus %v, then %v", saved, got)
	}
	after, _ := os.ReadFile(v.CorpusFile)
	if string(after) != string(before) {
		t.Fatal("a known corpus file was rewritten")
	}
}

// The same seed, budget and workers give the same campaign.
func TestCampaignIsDeterministic(t *testing.T) {
	args := []string{"-target", "no-retry-bound", "-duration", "0", "-checks", "300", "-workers", "2", "-batch", "50",
		"-seed", "77", "-corpus", "", "-html", "", "-json"}
	a := decode[campaignJSON](t, fuzzrun(t, args...))
	b := decode[campaignJSON](t, fuzzrun(t, args...))
	if a.Checks != b.Checks || !reflect.DeepEqual(a.Properties, b.Properties) || len(a.Violations) != len(b.Violations) {
		t.Fatalf("runs differ:\n%+v\n%+v", a, b)
	}
	if len(a.Violations) == 0 {
		t.Fatal("no violation of no-retry-bound found; the comparison proves little")
	}
	for i := range a.Violations {
		x, y := a.Violations[i], b.Violations[i]
		if x.Property != y.Property || x.Seed != y.Seed || x.Worker != y.Worker || x.Checks != y.Checks || string(x.Scenario) != string(y.Scenario) {
			t.Errorf("violation %d differs:\n%+v\n%+v", i, x, y)
		}
	}
}

// Cancelling the context (what SIGINT does) ends a campaign at once; the
// report so far is written.
func TestCampaignCancelWritesReport(t *testing.T) {
	dir := t.TempDir()
	html := filepath.Join(dir, "r.html")
	ctx, cancel := context.WithTimeout(context.Background(), 700*time.Millisecond)
	defer cancel()
	start := time.Now()
	r := fuzzrunContext(t, ctx, "-duration", "1m", "-workers", "2", "-seed", "5", "-corpus", filepath.Join(dir, "c"), "-html", html, "-json")
	if took := time.Since(start); took > 20*time.Second {
		t.Fatalf("the campaign took %v to stop", took)
	}
	if r.code != exitInconclusive {
		t.Fatalf("exit %d, want %d (interrupted: nothing proven)\n%s", r.code, exitInconclusive, r.stderr)
	}
	rep := decode[campaignJSON](t, r)
	if !rep.Interrupted || rep.Verdict != verdictInterrupted || rep.Exit != exitInconclusive {
		t.Fatalf("report does not say interrupted: %+v", rep)
	}
	page, err := os.ReadFile(html)
	if err != nil {
		t.Fatal(err)
	}
	mustContain(t, "report", string(page), "interrupted")
	mustContain(t, "stderr", r.stderr, "interrupted; stopping the workers")
}

// A law switched off with -off is judged by nobody: the mutant that breaks
// only that law passes, and the text, JSON and HTML reports record the law
// and the reason.
func TestCampaignLawOffWithReason(t *testing.T) {
	dir := t.TempDir()
	const reason = "our DLQ keeps its metadata elsewhere (ADR-9)"
	args := []string{"-target", "dlq-entry-without-context", "-property", "bounded-attempts", "-duration", "0", "-checks", "300",
		"-workers", "1", "-seed", "1", "-corpus", "", "-off", "bounded-attempts/dlq-metadata=" + reason}
	html := filepath.Join(dir, "r.html")
	r := fuzzrun(t, append(args, "-html", html)...)
	if r.code != exitOK {
		t.Fatalf("exit %d, want %d with the law off\n%s\n%s", r.code, exitOK, r.stdout, r.stderr)
	}
	mustContain(t, "summary", r.stdout, "laws switched off (not judged):", "bounded-attempts/dlq-metadata: "+reason, "no violation found.")
	page, err := os.ReadFile(html)
	if err != nil {
		t.Fatal(err)
	}
	mustContain(t, "HTML report", string(page), "switched off: <code class=\"law\">dlq-metadata</code>", "ADR-9")
	rep := decode[campaignJSON](t, fuzzrun(t, append(args, "-html", "", "-json")...))
	if len(rep.Properties) != 1 || len(rep.Properties[0].Off) != 1 || rep.Properties[0].Off[0].Law != "dlq-metadata" || rep.Properties[0].Off[0].Reason != reason {
		t.Fatalf("JSON properties %+v, want dlq-metadata off with its reason", rep.Properties)
	}
	// The same campaign with the law on catches the mutant.
	if r := fuzzrun(t, append(args[:len(args)-2:len(args)-2], "-html", "")...); r.code != exitViolation {
		t.Fatalf("with the law on: exit %d, want %d", r.code, exitViolation)
	}
}
