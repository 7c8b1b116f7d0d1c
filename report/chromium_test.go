package report_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/report"
)

// chromium finds a Chromium binary. Without one the browser test skips,
// unless CHROMIUM_REQUIRED=1 says this machine must have one.
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"/usr/bin/chromium", "chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CHROMIUM_REQUIRED") == "1" {
		t.Fatal("CHROMIUM_REQUIRED=1 but no chromium found; install it (apt-get install -y chromium)")
	}
	t.Skip("no chromium on this machine: skipping the browser test (apt-get install -y chromium, or set CHROMIUM_REQUIRED=1 to make this a failure)")
	return ""
}

// TestTimelineInChromium renders a report, loads it in headless Chromium
// and checks the DOM the browser built: every timeline is there with its
// lanes and chips, and the page's script ran (it marks each timeline
// data-ready and writes the event count into every lane header).
func TestTimelineInChromium(t *testing.T) {
	bin := chromium(t)
	r := sampleRun(t)
	dom := browserDOM(t, bin, r)

	ready := regexp.MustCompile(`<table class="timeline[^"]*" data-kind="(\w+)"[^>]*data-ready="true"`).FindAllStringSubmatch(dom, -1)
	if len(ready) != 2 || ready[0][1] != "consumption" || ready[1][1] != "projection" {
		t.Fatalf("timelines the script finished: %v, want a consumption and a projection one\n%s", ready, head(dom))
	}
	cons := r.Cases[0].Outcome.Consumption
	for _, w := range cons.Config.Workers {
		head := regexp.MustCompile(`data-lane="` + w.Name + `"[^>]*>` + w.Name + `<span class="sub">[^<]*</span><span class="count">(\d+) events?</span>`)
		m := head.FindStringSubmatch(dom)
		if m == nil || m[1] == "0" {
			t.Errorf("lane %s has no counted events in the browser's DOM", w.Name)
		}
	}
	if n := strings.Count(dom, `class="ev `); n < len(cons.Actions) {
		t.Errorf("%d chips in the DOM, want at least one per action (%d)", n, len(cons.Actions))
	}
	for _, kind := range []string{"deliver", "commit", "ledger-write", "emit"} {
		if !strings.Contains(dom, `data-kind="`+kind+`"`) {
			t.Errorf("no %s chip in the DOM", kind)
		}
	}
}

// browserDOM writes r as a page, loads it in headless Chromium and
// returns the DOM the browser built, once its script has run.
func browserDOM(t *testing.T, bin string, r *report.Run) string {
	t.Helper()
	dir := t.TempDir()
	page := filepath.Join(dir, "report.html")
	if err := report.WriteFile(page, r); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
		"--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--user-data-dir="+filepath.Join(dir, "profile"), "--virtual-time-budget=5000", "--dump-dom", "file://"+page)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("chromium: %v\n%s", err, stderr.String())
	}
	return string(out)
}

func head(s string) string {
	if len(s) > 2000 {
		return s[:2000] + "..."
	}
	return s
}
