package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/idemcheck/idemcheck/corpus"
	"github.com/idemcheck/idemcheck/faults/scenario"
)

// A corpus file replays clean against the reference (exit 0) and fails
// against the mutant it catches (exit 1), with the verdicts and the trace.
func TestReplayCorpusFile(t *testing.T) {
	file := corpusCase(t, "fencing")
	ok := fuzzrun(t, "replay", file, "-html", "")
	if ok.code != exitOK {
		t.Fatalf("reference: exit %d\n%s%s", ok.code, ok.stdout, ok.stderr)
	}
	mustContain(t, "replay", ok.stdout, "against reference", "PASS fencing", "trace:", " 1. t=+0ms start:",
		"situations reached: takeover-after-lease-expiry, stale-commit-refused")

	html := filepath.Join(t.TempDir(), "r.html")
	bad := fuzzrun(t, "replay", file, "-target", "takeover-without-fencing", "-html", html)
	if bad.code != exitViolation {
		t.Fatalf("mutant: exit %d\n%s%s", bad.code, bad.stdout, bad.stderr)
	}
	mustContain(t, "replay", bad.stdout, "FAIL fencing", "expected here: fencing/stale-token-changes-nothing fails")
	page, err := os.ReadFile(html)
	if err != nil {
		t.Fatal(err)
	}
	mustContain(t, "report", string(page), `<table class="timeline" data-kind="consumption"`, "FAIL fencing")
}

func TestReplayJSON(t *testing.T) {
	file := corpusCase(t, "hlc-laws")
	c, err := corpus.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	var mutant string
	for m, p := range c.CaughtBy {
		if strings.HasPrefix(p, "hlc-laws/") {
			mutant = m
		}
	}
	r := fuzzrun(t, "replay", file, "-target", mutant, "-property", "hlc-laws", "-html", "", "-json")
	rep := decode[replayJSON](t, r)
	if r.code != exitViolation || rep.Pass || rep.Kind != "projection" || len(rep.Verdicts) != 1 || rep.Verdicts[0].Pass ||
		rep.Recorded == nil || rep.Recorded.Property != "hlc-laws" || len(rep.Trace) == 0 || rep.Exit != exitViolation {
		t.Fatalf("exit %d, report %+v", r.code, rep)
	}
	if rep.Situations == nil {
		t.Fatal("the JSON report has no situations list")
	}
}

// A bare scenario replays too; a malformed one is a usage error naming the
// file and the field.
func TestReplayBareAndMalformed(t *testing.T) {
	c, err := corpus.Load(corpusCase(t, "single-credit"))
	if err != nil {
		t.Fatal(err)
	}
	js, _ := scenario.Marshal(c.Scenario)
	dir := t.TempDir()
	bare := filepath.Join(dir, "bare.json")
	if err := os.WriteFile(bare, js, 0o644); err != nil {
		t.Fatal(err)
	}
	if r := fuzzrun(t, "replay", bare, "-html", ""); r.code != exitOK {
		t.Fatalf("bare scenario: exit %d\n%s", r.code, r.stderr)
	}
	broken := filepath.Join(dir, "broken.json")
	data := strings.Replace(string(js), `"worker": "w1"`, `"worker": "w9"`, 1)
	if err := os.WriteFile(broken, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	r := fuzzrun(t, "replay", broken, "-html", "")
	if r.code != exitUsage || !strings.Contains(r.stderr, broken+`: consumption.steps[`) || !strings.Contains(r.stderr, `worker: "w9" is not a listed worker`) {
		t.Fatalf("exit %d, stderr %s", r.code, r.stderr)
	}
	if r := fuzzrun(t, "replay", bare, "-target", "hlc-no-merge", "-html", ""); r.code != exitUsage ||
		!strings.Contains(r.stderr, `-target: "hlc-no-merge" cannot play consumption scenarios`) {
		t.Fatalf("exit %d, stderr %s", r.code, r.stderr)
	}
}
