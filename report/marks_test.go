package report_test

import (
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/idemcheck/idemcheck/internal/consumerharness"
	"github.com/idemcheck/idemcheck/properties/coverage"
)

// The rows a consumer's timeline marks are the statements that applied
// the event once too many: the second INSERT INTO ledger of the event
// applied twice, not the acks, and nothing the harmless replay did.
func TestConsumerTimelineMarksTheSecondApplication(t *testing.T) {
	r, res := brokenConsumerRun(t)
	html := render(t, r)
	flagged := regexp.MustCompile(`<tr data-line="(\d+)" class="flagged"`).FindAllStringSubmatch(html, -1)
	if len(flagged) == 0 {
		t.Fatal("no row is marked")
	}
	byLine := map[string]consumerharness.Entry{}
	for _, e := range res.Outcome.Trace.Entries() {
		byLine[strconv.Itoa(e.Line)] = e
	}
	var inserts []int
	for _, e := range res.Outcome.Trace.Entries() {
		if e.Effect {
			inserts = append(inserts, e.Line)
		}
	}
	if len(inserts) < 2 {
		t.Fatalf("the trace shows %d writes of the effects, want two (%v)", len(inserts), inserts)
	}
	for _, m := range flagged {
		e := byLine[m[1]]
		if e.Kind != consumerharness.KindSQL || !strings.Contains(e.Text, "INSERT INTO ledger") {
			t.Errorf("line %s is marked: %s; want only the second INSERT INTO ledger", m[1], e.Text)
		}
		if m[1] == strconv.Itoa(inserts[0]) {
			t.Errorf("line %s, the event's first (due) application, is marked", m[1])
		}
	}
}

// Every row of a coverage table says what counts as reaching it, a
// consumer's as a campaign's.
func TestEveryCoverageRowSaysWhatCounts(t *testing.T) {
	r, _ := brokenConsumerRun(t)
	r.Coverage = append(r.Coverage, coverage.Row{Name: "lock-wait", Kind: "consumer", Runs: 3, Reached: 1})
	html := render(t, r)
	rows := regexp.MustCompile(`(?s)<tr data-situation="([^"]+)"[^>]*>(.*?)</tr>`).FindAllStringSubmatch(html, -1)
	if len(rows) < len(consumerharness.Situations) {
		t.Fatalf("%d coverage rows, want at least %d", len(rows), len(consumerharness.Situations))
	}
	for _, m := range rows {
		if regexp.MustCompile(`<td class="doc">\s*</td>`).MatchString(m[2]) {
			t.Errorf("situation %s: the \"what counts\" cell is empty", m[1])
		}
	}
}

// A campaign's headline counts distinct counterexamples, not every time a
// worker found one again.
func TestHeadlineCountsDistinctCounterexamples(t *testing.T) {
	r := sampleRun(t)
	for i := range r.Properties {
		if r.Properties[i].Name == "single-credit" {
			r.Properties[i].Violations = 5
		}
	}
	r.Cases[0].CorpusFile, r.Cases[1].CorpusFile = "corpus/cases/a.json", "corpus/cases/b.json"
	html := render(t, r)
	if !strings.Contains(html, `id="headline">2 distinct counterexamples found (5 violations in all`) {
		t.Errorf("headline: %s", regexp.MustCompile(`id="headline">[^<]*`).FindString(html))
	}
	r.Cases[0].New, r.Cases[1].New = true, false
	html = render(t, r)
	if !strings.Contains(html, "a.json</code> (new)") || !strings.Contains(html, "b.json</code> (already known)") {
		t.Errorf("a file the run wrote is not (new), or one it did not is not (already known): %v", regexp.MustCompile(`corpus file <code>[^<]*</code>[^<]*`).FindAllString(html, -1))
	}
}
