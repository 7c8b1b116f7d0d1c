package report_test

import (
	"context"
	"encoding/json"
	"html"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/examples/consumers/splitcheck"
	"github.com/idemcheck/idemcheck/internal/consumerharness"
	"github.com/idemcheck/idemcheck/report"
)

// layout is what the measuring script reads of a page in the browser.
type layout struct {
	Timelines []struct {
		Wrap, Table, WrapRight, FlagsRight int
		Lanes                              []int
		// Clipped counts the "marked because" notes cut off: wider than
		// their cell, or past the timeline's visible right edge.
		Clipped int
		// SQLLines is the most lines a statement's text takes in its chip.
		SQLLines int
	}
	// Colors are the text colours of the coverage counts, by state.
	Colors map[string]string
}

// measure is appended to the page: it measures the laid-out page and
// leaves the figures in <pre id="layout">.
const measure = `<script>
(function () {
  var out = {Timelines: [], Colors: {}};
  document.querySelectorAll('table.timeline').forEach(function (tl) {
    var wrap = tl.parentElement.getBoundingClientRect(), t = tl.getBoundingClientRect();
    var ths = tl.querySelectorAll('thead th'), flags = ths[ths.length - 1].getBoundingClientRect();
    var m = {Wrap: Math.round(wrap.width), Table: Math.round(t.width), WrapRight: Math.round(wrap.right), FlagsRight: Math.round(flags.right), Lanes: [], Clipped: 0, SQLLines: 0};
    tl.querySelectorAll('th.lane-head').forEach(function (h) { m.Lanes.push(Math.round(h.getBoundingClientRect().width)); });
    tl.querySelectorAll('td.flags div').forEach(function (d) {
      if (d.scrollWidth > d.clientWidth + 1 || d.getBoundingClientRect().right > wrap.right + 1) { m.Clipped++; }
    });
    tl.querySelectorAll('.ev[data-kind="sql"] .detail').forEach(function (d) {
      var lh = parseFloat(getComputedStyle(d).lineHeight) || 16;
      m.SQLLines = Math.max(m.SQLLines, Math.round(d.getBoundingClientRect().height / lh));
    });
    out.Timelines.push(m);
  });
  document.querySelectorAll('span.cov').forEach(function (c) {
    out.Colors[c.classList[1]] = getComputedStyle(c).color;
  });
  var pre = document.createElement('pre');
  pre.id = 'layout';
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
})();
</script>
</body>`

// browserLayout renders r, loads it in headless Chromium in a window
// width pixels wide, and returns what the measuring script read.
func browserLayout(t *testing.T, bin string, r *report.Run, width int) layout {
	t.Helper()
	dir := t.TempDir()
	page := filepath.Join(dir, "report.html")
	if err := report.WriteFile(page, r); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(page, []byte(strings.Replace(string(b), "</body>", measure, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--hide-scrollbars",
		"--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--window-size="+strconv.Itoa(width)+",1200",
		"--user-data-dir="+filepath.Join(dir, "profile"), "--virtual-time-budget=5000", "--dump-dom", "file://"+page)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("chromium: %v\n%s", err, stderr.String())
	}
	m := regexp.MustCompile(`<pre id="layout">([^<]*)</pre>`).FindSubmatch(out)
	if m == nil {
		t.Fatalf("the measuring script left nothing\n%s", head(string(out)))
	}
	var l layout
	if err := json.Unmarshal([]byte(html.UnescapeString(string(m[1]))), &l); err != nil {
		t.Fatalf("%v: %s", err, m[1])
	}
	return l
}

// On a wide page the timeline takes the page's width, its lanes share it
// equally, and a statement fits its chip in a few lines.
func TestTimelineTakesThePageWidthInChromium(t *testing.T) {
	bin := chromium(t)
	r, _ := brokenConsumerRun(t)
	l := browserLayout(t, bin, r, 1600)
	if len(l.Timelines) != 1 {
		t.Fatalf("%d timelines measured, want 1", len(l.Timelines))
	}
	tl := l.Timelines[0]
	if tl.Table < tl.Wrap-2 {
		t.Errorf("the timeline is %dpx wide in a %dpx frame: the page's width goes unused", tl.Table, tl.Wrap)
	}
	for i, w := range tl.Lanes {
		if w < 280 || w-tl.Lanes[0] > 2 || tl.Lanes[0]-w > 2 {
			t.Errorf("lane %d is %dpx wide (lanes %v): want the lanes equal and at least 280px on a 1600px page", i, w, tl.Lanes)
		}
	}
	if tl.SQLLines > 3 {
		t.Errorf("a statement takes %d lines in its chip, want at most 3", tl.SQLLines)
	}
	if tl.Clipped > 0 || tl.FlagsRight > tl.WrapRight+1 {
		t.Errorf("%d \"marked because\" notes clipped; the column ends at %dpx, the frame at %dpx", tl.Clipped, tl.FlagsRight, tl.WrapRight)
	}
}

// With six lanes (the broker and five workers) on a laptop's page, the
// "marked because" column is on the page and its notes are whole.
func TestSixLanesKeepTheMarksInChromium(t *testing.T) {
	bin := chromium(t)
	c := ledgerConsumer("splitcheck", consumerharness.Consumer{Schema: splitcheck.Schema, Handler: splitcheck.Handle})
	s := &consumerharness.Scenario{Version: 1, Workers: 5, Policy: consumerharness.DefaultPolicy,
		Events: []consumerharness.Event{{ID: "e1", User: "u1", Amount: 100}},
		Steps:  []consumerharness.Step{{Op: consumerharness.OpRun, Worker: 1}, {Op: consumerharness.OpAdvance, Ms: 6000}, {Op: consumerharness.OpRun, Worker: 1}}}
	res, err := consumerharness.Replay(c, s)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Failed {
		t.Fatalf("the scenario does not break splitcheck:\n%s", res.Report())
	}
	r := &report.Run{Title: "six lanes", Mode: "replay", Target: c.Name, Checks: 1, Unit: "scenario",
		Consumer: &report.ConsumerRun{Consumer: c.Name, Database: "sqlite", Laws: report.ConsumerLaws(c, res.Breaches)},
		Cases:    []report.Case{{Title: res.Law + " against " + c.Name, Property: res.Law, Target: c.Name, Consumer: &res}}}
	l := browserLayout(t, bin, r, 1366)
	if len(l.Timelines) != 1 || len(l.Timelines[0].Lanes) != 6 {
		t.Fatalf("timelines measured: %+v, want one with 6 lanes", l.Timelines)
	}
	tl := l.Timelines[0]
	if tl.FlagsRight > tl.WrapRight+1 {
		t.Errorf("the \"marked because\" column ends at %dpx, past the timeline's frame (%dpx)", tl.FlagsRight, tl.WrapRight)
	}
	if tl.Clipped > 0 {
		t.Errorf("%d \"marked because\" notes are clipped", tl.Clipped)
	}
}

// A situation never reached is not painted as a failure: red is for what
// failed (a required situation when the coverage check failed).
func TestUnreachedIsNotRedInChromium(t *testing.T) {
	bin := chromium(t)
	r, _ := brokenConsumerRun(t)
	r.CoverageFailure = "situations never reached: crash-at-exec"
	l := browserLayout(t, bin, r, 1600)
	red := "rgb(198, 40, 40)"
	if c, ok := l.Colors["unreached"]; !ok || c == red {
		t.Errorf("never-reached counts are %q (colours %v), want a neutral colour", c, l.Colors)
	}
	if c := l.Colors["failed"]; c != red {
		t.Errorf("a situation the failed coverage check names is %q, want red (colours %v)", c, l.Colors)
	}
}
