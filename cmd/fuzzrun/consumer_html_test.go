package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A -consumer campaign writes its HTML report as campaigns do: a broken
// consumer's page has the laws with the broken one, the counterexample's
// timeline (a lane per worker and one for the broker), its diff and the
// coverage table; the replay of the saved case writes one too.
func TestConsumerCampaignWritesTheReport(t *testing.T) {
	dir := t.TempDir()
	page := filepath.Join(dir, "r.html")
	rep := decode[consumerJSON](t, fuzzrun(t, "consumer", "nounique", "-checks", "400", "-seed", "3", "-corpus", filepath.Join(dir, "c"), "-html", page, "-json"))
	if rep.Exit != exitViolation || rep.HTML != page {
		t.Fatalf("report %+v", rep)
	}
	html := readFile(t, page)
	mustContain(t, "the page", html,
		`<p class="headline bad" id="headline">consumer nounique breaks single-credit</p>`,
		`<tr data-law="single-credit" data-status="violated">`, `<tr data-law="runs" data-status="pass">`,
		`<tr data-law="atomicity" data-status="n/a">`,
		`<table class="timeline" data-kind="consumer"`, `<th class="lane-head world" data-lane="broker"`, `<th class="lane-head worker" data-lane="w1"`,
		`data-kind="sql"`, `data-kind="deliver"`, "expected (-want) against the consumer (&#43;got)", "map[string]int{",
		`id="coverage"`, `<tr data-situation="crash-at-commit"`, rep.CorpusFile+"</code> (new)", "go run ./cmd/fuzzrun consumer nounique -replay")

	replayPage := filepath.Join(dir, "replay.html")
	r := fuzzrun(t, "consumer", "nounique", "-replay", rep.CorpusFile, "-html", replayPage)
	if r.code != exitViolation || !strings.Contains(r.stdout, "report: "+replayPage) {
		t.Fatalf("replay: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	mustContain(t, "the replay's page", readFile(t, replayPage), `<table class="timeline" data-kind="consumer"`,
		`<tr data-law="single-credit" data-status="violated">`, "replay of "+rep.CorpusFile)

	// The same case replayed against a correct consumer: every law passes,
	// and the timeline shows what it did.
	r = fuzzrun(t, "consumer", "adr", "-replay", rep.CorpusFile, "-html", replayPage)
	if r.code != exitOK {
		t.Fatalf("replay against adr: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	html = readFile(t, replayPage)
	mustContain(t, "the passing replay's page", html, `<p class="headline good"`, `<table class="timeline" data-kind="consumer"`)
	if strings.Contains(html, `data-status="violated"`) {
		t.Error("a passing replay's page shows a violated law")
	}
}

// A passing campaign's page has the laws, the figures and the coverage;
// by default it is written under the output directory, never the working
// directory, and named in the output; -html "" writes none.
func TestConsumerCampaignReportDefaultAndNone(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	args := []string{"consumer", "insertfirst", "-checks", "60", "-seed", "1", "-corpus", ""}
	r := fuzzrun(t, args...)
	page := defaultReportFile("consumer-insertfirst")
	if r.code != exitOK || !strings.Contains(r.stdout, "report: "+page) || !strings.HasPrefix(page, outputDir()) {
		t.Fatalf("exit %d, want the report at %s\n%s%s", r.code, page, r.stdout, r.stderr)
	}
	if got := files(t, dir); len(got) != 0 {
		t.Fatalf("the default report went into the working directory: %v", got)
	}
	html := readFile(t, page)
	mustContain(t, "the page", html, `<p class="headline good" id="headline">consumer insertfirst: no law broken in 60 scenario(s)</p>`,
		`<tr data-law="single-credit" data-status="pass">`, `<tr data-law="atomicity" data-status="pass">`,
		`data-figure="scenarios">60<`, `data-figure="scenarios-per-second">`, `id="coverage"`)
	if strings.Contains(html, `<table class="timeline"`) {
		t.Error("a passing campaign's page has a timeline")
	}
	os.Remove(page)
	if r := fuzzrun(t, append(args, "-html", "")...); r.code != exitOK || strings.Contains(r.stdout, "report:") {
		t.Fatalf(`-html "": exit %d\n%s%s`, r.code, r.stdout, r.stderr)
	}
	if got := files(t, dir); len(got) != 0 {
		t.Fatalf(`-html "" wrote %v`, got)
	}
	// A report that cannot be written is the harness failing, said so.
	blocker := filepath.Join(dir, "file")
	if err := os.WriteFile(blocker, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if r := fuzzrun(t, append(args, "-html", filepath.Join(blocker, "r.html"))...); r.code != exitInternal || !strings.Contains(r.stderr, "report:") {
		t.Fatalf("unwritable -html: exit %d, want %d\n%s", r.code, exitInternal, r.stderr)
	}
	// -html stays refused where it means nothing.
	if r := fuzzrun(t, "broker", "nats", "-consumer", "lru", "-html", "x.html"); r.code != exitUsage || !strings.Contains(r.stderr, "-html: fuzzrun broker has no such flag") {
		t.Fatalf("-broker -consumer -html: exit %d\n%s", r.code, r.stderr)
	}
}
