package report_test

import (
	"strings"
	"testing"

	"github.com/idemcheck/idemcheck/report"
)

// An exploration's page shows what was searched, the table per depth, the
// figures and the verdict as its headline; a violation is marked bad and
// its counterexample gets its timeline.
func TestRenderExploration(t *testing.T) {
	e := &report.Exploration{World: "events ok, 1 group(s) x 2 worker(s), 1 node(s)", Menu: []string{"produce", "deliver"},
		Engine: "compact", DepthAsked: 2, States: 7, Transitions: 12, StatesPerSecond: 3500, BytesPerState: 28,
		Levels:  []report.ExploreLevel{{Depth: 0, States: 1}, {Depth: 1, States: 2, Transitions: 4}, {Depth: 2, States: 4, Transitions: 8}},
		Verdict: "verified: every schedule up to depth 2, 7 distinct states, no violation"}
	html := render(t, &report.Run{Title: "t", Mode: "explore", Target: "reference", Explore: e})
	for _, want := range []string{`<p class="headline good" id="headline">verified: every schedule up to depth 2, 7 distinct states, no violation</p>`,
		`id="exploration"`, "events ok, 1 group(s) x 2 worker(s), 1 node(s)", "<code>produce</code>, <code>deliver</code>", "<code>compact</code>",
		`<tr data-depth="2"><td class="num">2</td><td class="num">4</td><td class="num">8</td></tr>`,
		`data-figure="states">7<`, `data-figure="transitions">12<`, `data-figure="states-per-second">3500<`, `data-figure="bytes-per-state">28<`} {
		if !strings.Contains(html, want) {
			t.Errorf("the page lacks %s", want)
		}
	}

	e.Violated, e.Verdict = true, "violation at depth 2 (a shortest schedule): single-credit"
	html = render(t, &report.Run{Title: "t", Mode: "explore", Target: "no-dedup", Explore: e, Cases: []report.Case{killCase(t, "no-dedup")}})
	for _, want := range []string{`<p class="headline bad" id="headline">violation at depth 2`, `<table class="timeline" data-kind="consumption"`, "FAIL single-credit"} {
		if !strings.Contains(html, want) {
			t.Errorf("the page lacks %s", want)
		}
	}
}

// A projection exploration lists its histories, and whatever a history or
// a verdict says is escaped.
func TestRenderProjectionExplorationEscapes(t *testing.T) {
	e := &report.Exploration{World: "every delivery order, up to 2 copies of each event",
		Histories: []report.HistoryRow{{Name: "<b>x</b>", Doc: "a & b", Orders: 6, Verdict: "verified: <script>alert(1)</script>"}},
		Verdict:   "verified: every delivery order of 1 history <i>"}
	html := render(t, &report.Run{Title: "t", Mode: "explore", Explore: e})
	for _, want := range []string{`id="histories"`, `data-history="&lt;b&gt;x&lt;/b&gt;"`, "a &amp; b", "&lt;script&gt;alert(1)&lt;/script&gt;",
		`<td class="num">6</td>`, "of 1 history &lt;i&gt;"} {
		if !strings.Contains(html, want) {
			t.Errorf("the page lacks %s", want)
		}
	}
	if strings.Contains(html, "<script>alert") || strings.Contains(html, "<b>x</b>") || strings.Contains(html, `id="levels"`) {
		t.Error("the page holds unescaped text, or a depth table without depths")
	}
}
