package report_test

import (
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/idemcheck/idemcheck/examples/consumers/adr"
	"github.com/idemcheck/idemcheck/examples/consumers/splitcheck"
	"github.com/idemcheck/idemcheck/internal/consumerharness"
	"github.com/idemcheck/idemcheck/report"
)

func ledgerConsumer(name string, h consumerharness.Consumer) consumerharness.Consumer {
	h.Name = name
	h.Effects = consumerharness.PerEvent("SELECT event_id, amount_cents FROM ledger")
	h.Dedupe = "SELECT event_id FROM processed_events"
	return h
}

// consumerRun hunts c with a fixed seed and reports the run as fuzzrun
// -consumer does.
func consumerRun(t *testing.T, c consumerharness.Consumer, checks int) (*report.Run, consumerharness.Result) {
	t.Helper()
	res, err := consumerharness.Hunt(c, consumerharness.Checks(checks), consumerharness.Seed(1))
	if err != nil {
		t.Fatal(err)
	}
	cr := &report.ConsumerRun{Consumer: c.Name, Database: "sqlite", PerSecond: 321, Laws: report.ConsumerLaws(c, res.Breaches)}
	for _, s := range consumerharness.Situations {
		if res.Coverage[s] > 0 {
			cr.Reached++
		} else {
			cr.Unreached = append(cr.Unreached, s)
		}
	}
	r := &report.Run{Title: "fuzzrun consumer " + c.Name, Mode: "consumer", Target: c.Name, Seed: 1, Checks: int64(res.Checks),
		Consumer: cr, Coverage: report.ConsumerCoverage(res.Coverage, int64(res.Checks))}
	if res.Failed {
		r.Cases = append(r.Cases, report.Case{Title: res.Law + " against " + c.Name, Property: res.Law, Target: c.Name,
			CorpusFile: "corpus/consumers/x.json", Replay: "go run ./cmd/fuzzrun consumer " + c.Name + " -replay x", Consumer: &res})
	}
	return r, res
}

func brokenConsumerRun(t *testing.T) (*report.Run, consumerharness.Result) {
	t.Helper()
	r, res := consumerRun(t, ledgerConsumer("splitcheck", consumerharness.Consumer{Schema: splitcheck.Schema, Handler: splitcheck.Handle}), 1000)
	if !res.Failed || res.Law != consumerharness.LawSingleCredit {
		t.Fatalf("splitcheck was not caught:\n%s", res.Report())
	}
	return r, res
}

// A consumer's counterexample is drawn as a timeline: a lane for the
// broker and one per worker, a row per trace line, the workers' SQL in
// their lanes and the deliveries in the broker's; the laws table says
// which law broke, and the diff is there.
func TestRenderConsumerCounterexample(t *testing.T) {
	r, res := brokenConsumerRun(t)
	html := render(t, r)
	for _, want := range []string{
		`<p class="headline bad" id="headline">consumer splitcheck breaks single-credit`,
		`<tr data-law="single-credit" data-status="violated">`, `<tr data-law="nothing-lost" data-status="pass">`,
		`<tr data-law="atomicity" data-status="`, `data-figure="scenarios-per-second">321<`,
		`<table class="timeline" data-kind="consumer" data-lanes="` + strconv.Itoa(1+res.Scenario.Workers) + `"`,
		`<th class="lane-head world" data-lane="broker"`, `<th class="lane-head worker" data-lane="w1"`,
		`id="consumer-legend"`, "expected (-want) against the consumer (&#43;got)", "map[string]int{", "FAIL single-credit",
		`data-kind="sql"`, `data-kind="deliver"`, `data-kind="receive"`, `data-kind="ack"`, `data-kind="produce"`,
		`<tr data-situation="duplicate-delivered"`, `class="flagged"`,
	} {
		if !strings.Contains(html, want) {
			t.Errorf("the page lacks %s", want)
		}
	}
	// Every line of the trace is a row (the phases as separators), and
	// every worker line sits in its worker's lane.
	entries := res.Outcome.Trace.Entries()
	rows := regexp.MustCompile(`<tr data-line="\d+"`).FindAllString(html, -1)
	seps := strings.Count(html, `<tr class="sep">`)
	if len(rows)+seps != len(entries) {
		t.Errorf("%d rows and %d separators for %d trace lines", len(rows), seps, len(entries))
	}
	for _, e := range entries {
		if e.Kind != consumerharness.KindSQL {
			continue
		}
		cell := regexp.MustCompile(`<td class="lane" data-lane="` + e.Worker + `"><div class="ev [^"]*" data-lane="` + e.Worker + `" data-kind="sql"><span class="label">` + e.Op + `( → [^<]*)?</span>`)
		if !cell.MatchString(rowOf(html, e.Line)) {
			t.Errorf("line %d (%s) is not drawn in lane %s", e.Line, e.Text, e.Worker)
		}
	}
	if strings.Contains(html, `data-lane="harness"`) {
		t.Error("the harness has a lane: its lines are separators")
	}
}

// A passing run shows the laws (all passing but the ones not judged), the
// figures and the coverage, and no timeline.
func TestRenderConsumerPass(t *testing.T) {
	c := ledgerConsumer("adr", consumerharness.Consumer{Schema: adr.Schema, Handler: adr.Handle})
	c.Dedupe = ""
	r, res := consumerRun(t, c, 50)
	if res.Failed {
		t.Fatalf("adr flagged:\n%s", res.Report())
	}
	html := render(t, r)
	for _, want := range []string{
		`<p class="headline good" id="headline">consumer adr: no law broken in 50 scenario(s)</p>`,
		`<tr data-law="single-credit" data-status="pass">`, `<tr data-law="atomicity" data-status="n/a">`, "gives no Dedupe query",
		`data-figure="scenarios">50<`, `id="coverage"`, `<tr data-situation="lock-wait" data-missing="false" data-state="reached"`,
	} {
		if !strings.Contains(html, want) {
			t.Errorf("the page lacks %s", want)
		}
	}
	if strings.Contains(html, `<table class="timeline"`) || strings.Contains(html, `data-status="violated"`) {
		t.Error("a passing run has a timeline or a violated law")
	}
	// A situation no scenario reached is named.
	r.Consumer.Unreached = append(r.Consumer.Unreached, "crash at <rollback>")
	if html := render(t, r); !strings.Contains(html, `never reached: `) || !strings.Contains(html, "crash at &lt;rollback&gt;") {
		t.Error("the never-reached situations are not named, or not escaped")
	}
}

// rowOf is the timeline row of trace line n.
func rowOf(html string, n int) string {
	_, rest, ok := strings.Cut(html, `<tr data-line="`+strconv.Itoa(n)+`"`)
	if !ok {
		return ""
	}
	row, _, _ := strings.Cut(rest, "</tr>")
	return row
}

// TestConsumerTimelineInChromium loads a consumer run's page in headless
// Chromium: the timeline is built, its script ran, the broker's and every
// worker's lane count their events (the workers' SQL among them), and the
// laws and coverage tables are in the DOM.
func TestConsumerTimelineInChromium(t *testing.T) {
	bin := chromium(t)
	r, res := brokenConsumerRun(t)
	dom := browserDOM(t, bin, r)
	if !regexp.MustCompile(`<table class="timeline[^"]*" data-kind="consumer"[^>]*data-ready="true"`).MatchString(dom) {
		t.Fatalf("the script did not finish the consumer timeline\n%s", head(dom))
	}
	lanes := []string{consumerharness.LaneBroker}
	for i := range res.Scenario.Workers {
		lanes = append(lanes, "w"+strconv.Itoa(i+1))
	}
	for _, l := range lanes {
		m := regexp.MustCompile(`data-lane="` + l + `"[^>]*>` + l + `<span class="sub">[^<]*</span><span class="count">(\d+) events?</span>`).FindStringSubmatch(dom)
		if m == nil || m[1] == "0" {
			t.Errorf("lane %s has no counted events in the browser's DOM", l)
		}
	}
	for _, want := range []string{`id="laws"`, `data-law="single-credit" data-status="violated"`, `id="coverage"`,
		`data-kind="sql"`, `data-kind="deliver"`, `data-kind="ack"`, "map[string]int{"} {
		if !strings.Contains(dom, want) {
			t.Errorf("the browser's DOM lacks %s", want)
		}
	}
}
