package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/idemcheck/idemcheck/corpus"
)

func TestExploreVerifiesTheReference(t *testing.T) {
	r := fuzzrun(t, "explore", "-depth", "4", "-corpus", "", "-html", "")
	if r.code != exitOK {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{"depth  new states  transitions", "distinct states", "states/s", "bytes/state",
		"verified: every schedule up to depth 4,"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, r.stdout)
		}
	}
}

func TestExploreSavesTheShortestCounterexample(t *testing.T) {
	dir := t.TempDir()
	r := fuzzrun(t, "explore", "-depth", "8", "-target", "takeover-without-fencing", "-corpus", dir, "-html", "")
	if r.code != exitViolation {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stdout, "violation at depth 6 (a shortest schedule)") || !strings.Contains(r.stdout, "corpus file: ") {
		t.Fatalf("output:\n%s", r.stdout)
	}
	fs := files(t, dir)
	if len(fs) != 1 {
		t.Fatalf("corpus holds %v", fs)
	}
	c, err := corpus.Load(dir + "/" + fs[0])
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Scenario.Consumption.Steps) != 6 || c.Target != "takeover-without-fencing" {
		t.Fatalf("saved %d steps against %s", len(c.Scenario.Consumption.Steps), c.Target)
	}
	replay := fuzzrun(t, "replay", dir+"/"+fs[0], "-target", "takeover-without-fencing", "-html", "")
	if replay.code != exitViolation {
		t.Fatalf("the saved scenario does not fail again: exit %d\n%s", replay.code, replay.stdout)
	}
}

func TestExploreBadBounds(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"explore", "-depth", "0"}, "-depth"},
		{[]string{"explore", "-depth", "2147483647"}, "-depth"},
		{[]string{"explore", "-depth", "3", "-group-workers", "0"}, "no workers"},
		{[]string{"explore", "-depth", "3", "-steps", "produce,teleport"}, "unknown step \"teleport\""},
		{[]string{"explore", "-depth", "3", "-events", "sometimes"}, "-events"},
		{[]string{"explore", "-depth", "3", "-duration", "5"}, "-duration"},
		{[]string{"explore", "-max-memory", "0"}, "-max-memory"},
		{[]string{"explore", "-max-memory", "100KB"}, "-max-memory"},
		{[]string{"-depth", "3"}, "-depth: fuzzrun campaign has no such flag; it is a flag of fuzzrun explore"},
	} {
		r := fuzzrun(t, c.args...)
		if r.code != exitUsage || !strings.Contains(r.stderr, c.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 naming %q", c.args, r.code, r.stderr, c.want)
		}
	}
}

// Ctrl-C reports the depth explored so far, and proves nothing: exit 4.
func TestExploreInterrupted(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	r := fuzzrunContext(t, ctx, "explore", "-depth", "20", "-corpus", "", "-html", "")
	if r.code != exitInconclusive || !strings.Contains(r.stdout, "INTERRUPTED at depth 1 by a signal (Ctrl-C or SIGTERM): no depth fully explored") {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// -explore writes an HTML report holding the search and its verdict, and
// the counterexample's timeline when there is one; -html "" writes none.
func TestExploreWritesHTML(t *testing.T) {
	dir := t.TempDir()
	page := filepath.Join(dir, "explore.html")
	r := fuzzrun(t, "explore", "-depth", "3", "-corpus", "", "-html", page)
	if r.code != exitOK || !strings.Contains(r.stdout, "report: "+page) {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	html := readFile(t, page)
	for _, want := range []string{`id="headline">verified: every schedule up to depth 3,`, `id="levels"`, `<tr data-depth="3">`,
		`data-figure="states-per-second"`, `data-figure="bytes-per-state"`, `id="coverage"`, "step menu"} {
		if !strings.Contains(html, want) {
			t.Errorf("the report lacks %s", want)
		}
	}

	page = filepath.Join(dir, "violation.html")
	r = fuzzrun(t, "explore", "-depth", "2", "-target", "no-dedup", "-corpus", "", "-html", page)
	if r.code != exitViolation {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	html = readFile(t, page)
	for _, want := range []string{`<p class="headline bad" id="headline">violation at depth `, `<table class="timeline" data-kind="consumption"`, "FAIL single-credit"} {
		if !strings.Contains(html, want) {
			t.Errorf("the report lacks %s", want)
		}
	}

	empty := t.TempDir()
	r = fuzzrunIn(t, empty, "explore", "-depth", "2", "-corpus", "", "-html", "")
	if r.code != exitOK || strings.Contains(r.stdout, "report:") {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if fs := files(t, empty); len(fs) != 0 {
		t.Fatalf("-html \"\" wrote %v", fs)
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// fuzzrunIn runs fuzzrun with dir as the working directory, so that a file
// it writes by default would land there.
func fuzzrunIn(t *testing.T, dir string, args ...string) result {
	t.Helper()
	t.Chdir(dir)
	return fuzzrun(t, args...)
}
