package linearizability

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/impl/contract/store"
)

// twoAcquirers is a small violation: two clients acquire the same free key
// at once, and a third reads it afterwards.
func twoAcquirers() History {
	return history(
		claimOp(0, 1, 4, 10, acquired(1, 1, 100, false)),
		claimOp(1, 2, 3, 10, acquired(2, 1, 100, false)),
		readOp(2, 5, 6, &store.Record{Key: k1, State: store.Processing, Attempts: 1, Token: 2, StartedAtMs: 100, LeaseUntilMs: 110}),
	)
}

func TestExplanationNamesTheViolation(t *testing.T) {
	r := Check(twoAcquirers(), time.Minute)
	if r.Verdict != Violation || len(r.Violating) != 1 || r.Violating[0] != k1 {
		t.Fatalf("%+v", r)
	}
	want := "acme/ledger/evt-1: 3 operations; the longest linearizable prefix has 1, after which the key is processing tok=1 lease<110 #1 t≥100 and none of these can come next: client 1: claim(lease=10) → acquired tok=2 #1 @100"
	if len(r.Explanations) != 1 || r.Explanations[0] != want {
		t.Fatalf("explanations %q\nwant %q", r.Explanations, want)
	}
}

func TestWriteVisualizationOnlyForViolations(t *testing.T) {
	r := Check(history(claimOp(0, 1, 2, 10, acquired(1, 1, 100, false))), time.Minute)
	if err := WriteVisualization(filepath.Join(t.TempDir(), "v.html"), r); err == nil {
		t.Fatalf("visualized a %s result", r.Verdict)
	}
}

// findChromium returns the path of a Chromium binary, or skips the test
// when there is none, unless CHROMIUM_REQUIRED is set (as CI sets it), in
// which case a missing browser fails the test.
func findChromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CHROMIUM_REQUIRED") != "" {
		t.Fatal("chromium is not installed and CHROMIUM_REQUIRED is set: apt-get install -y chromium")
	}
	t.Skip("chromium is not installed (apt-get install -y chromium, or set CHROMIUM_REQUIRED=1 to make this a failure)")
	return ""
}

// TestVisualizationRendersInChromium opens the page of a violation in
// headless Chromium and checks the rendered DOM: porcupine's script must
// have drawn a box for every operation, with its description, and the
// annotation on the operation that cannot be linearized.
func TestVisualizationRendersInChromium(t *testing.T) {
	chromium := findChromium(t)
	r := Check(twoAcquirers(), time.Minute)
	if r.Verdict != Violation {
		t.Fatalf("%s", r)
	}
	dir := t.TempDir()
	page := filepath.Join(dir, "violation.html")
	if err := WriteVisualization(page, r); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, chromium,
		"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--disable-dev-shm-usage", "--user-data-dir="+filepath.Join(dir, "profile"),
		"--dump-dom", "file://"+page)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("chromium: %v\n%s", err, stderr.String())
	}
	dom := string(out)
	// Before the script runs the page has no <svg> in #canvas and no
	// history boxes: these are the script's work.
	if n := strings.Count(dom, `class="history-rect"`); n != 3 {
		t.Fatalf("rendered %d history boxes, want 3 (one per operation):\n%s", n, head(dom))
	}
	// Text inside a rendered <text> element, not the page's JSON data.
	for _, want := range []string{
		">claim(lease=10) → acquired tok=1 #1 @100</text>",
		">claim(lease=10) → acquired tok=2 #1 @100</text>",
		">read → processing tok=2 #1 lease&lt;110</text>",
		">✗ claim(lease=10) → acquired tok=2 #1 @100</text>",
		">" + AnnotationTag + " " + k1.String() + "</text>",
		`class="client-annotation-rect"`,
		// The checker's illegal linearization point, drawn in red.
		`class="linearization-invalid linearization-point"`,
	} {
		if !strings.Contains(dom, want) {
			t.Errorf("rendered page lacks %q", want)
		}
	}
	if t.Failed() {
		t.Logf("page: %s\n%s", page, head(dom))
	}
}

func head(s string) string { return s[:min(len(s), 4000)] }
