package main

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/idemcheck/idemcheck/internal/consumerharness"
)

// small are bounds a unit test can afford: one event and its duplicate.
var small = []string{"-events", "1", "-preemptions", "1", "-failures", "0"}

func TestConsumerExploreVerifiesACorrectConsumer(t *testing.T) {
	dir := t.TempDir()
	html := filepath.Join(dir, "r.html")
	r := fuzzrun(t, append([]string{"consumer", "insertfirst", "-explore", "-corpus", dir, "-html", html, "-workers", "2"}, small...)...)
	if r.code != exitOK || !strings.Contains(r.stdout, "VERIFIED insertfirst within these bounds") {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{"<= 1 preemption(s)", "distinct states", "by partial order", "coverage:"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("the report does not say %q:\n%s", want, r.stdout)
		}
	}
	page, err := os.ReadFile(html)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`id="levels"`, "verified within these bounds", `data-situation="crash-at-commit"`} {
		if !strings.Contains(string(page), want) {
			t.Errorf("the HTML report has no %s", want)
		}
	}
	if fs := files(t, dir); len(fs) != 1 {
		t.Errorf("a verification wrote %v", fs)
	}
}

func TestConsumerExploreFindsSavesAndReplays(t *testing.T) {
	dir := t.TempDir()
	r := fuzzrun(t, append([]string{"consumer", "splitcheck", "-explore", "-corpus", dir, "-html", "", "-json"}, small...)...)
	if r.code != exitViolation {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	rep := decode[consumerExploreJSON](t, r)
	if rep.Law != consumerharness.LawSingleCredit || rep.CorpusFile == "" || !strings.Contains(rep.Replay, "-replay") || rep.Scenario == nil || len(rep.Trace) == 0 {
		t.Fatalf("report %+v", rep)
	}
	if r := fuzzrun(t, "consumer", "splitcheck", "-replay", rep.CorpusFile); r.code != exitViolation || !strings.Contains(r.stdout, "FAIL single-credit") {
		t.Fatalf("replay: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

func TestConsumerExploreSaysWhatAnInterruptedSearchExplored(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	r := fuzzrunContext(t, ctx, "consumer", "adr", "-explore", "-html", "", "-corpus", "")
	if r.code != exitInconclusive || !strings.Contains(r.stdout, "NOT VERIFIED adr: interrupted; no bound of search (1) fully explored") {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = fuzzrun(t, "consumer", "adr", "-explore", "-html", "", "-corpus", "", "-checks", "30")
	if r.code != exitInconclusive || !strings.Contains(r.stdout, "the schedule budget (30) ran out") {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// TestConsumerExploreNoSymmetryNamesWorkersApart: -no-symmetry names the
// states with the workers in place, so the same verdict takes more
// distinct states than with a Handler's workers folded together.
func TestConsumerExploreNoSymmetryNamesWorkersApart(t *testing.T) {
	args := []string{"consumer", "adr", "-explore", "-corpus", "", "-html", "", "-json", "-workers", "1",
		"-events", "1", "-preemptions", "1", "-crashes", "0", "-failures", "0"}
	folded := fuzzrun(t, args...)
	apart := fuzzrun(t, append(args, "-no-symmetry")...)
	if folded.code != exitOK || apart.code != exitOK {
		t.Fatalf("exit %d and %d\n%s%s\n%s%s", folded.code, apart.code, folded.stdout, folded.stderr, apart.stdout, apart.stderr)
	}
	f, a := decode[consumerExploreJSON](t, folded), decode[consumerExploreJSON](t, apart)
	if !f.Verified || !a.Verified || a.States <= f.States {
		t.Errorf("folded: verified %t, %d states; apart: verified %t, %d states (want more)", f.Verified, f.States, a.Verified, a.States)
	}
}

func TestConsumerExploreUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"consumer", "adr", "-explore", "-depth", "3"}, "-depth: fuzzrun consumer has no such flag; it is a flag of fuzzrun explore"},
		{[]string{"consumer", "adr", "-explore", "-preemptions", "x"}, `-preemptions: "x" is not a whole number`},
		{[]string{"consumer", "adr", "-explore", "-events", "ok,later"}, `-events: event fate "later"`},
		{[]string{"consumer", "adr", "-explore", "-group-workers", "9"}, "-group-workers"},
		{[]string{"consumer", "adr", "-explore", "-durations", "soon"}, "-durations"},
		{[]string{"consumer", "adr", "-preemptions", "1"}, "-preemptions: bounds a consumer's model check"},
		{[]string{"consumer", "adr", "-no-symmetry"}, "-no-symmetry"},
		{[]string{"explore", "-depth", "2", "-crashes", "1"}, "-crashes: fuzzrun explore has no such flag; it is a flag of fuzzrun consumer"},
	} {
		r := fuzzrun(t, tc.args...)
		if r.code != exitUsage || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit %d saying %q", tc.args, r.code, r.stderr, exitUsage, tc.want)
		}
	}
}

// TestOneProc checks that a search of one worker runs on one processor
// and gets the setting back, and that a search of several workers, or a
// GOMAXPROCS the user set, is left alone.
func TestOneProc(t *testing.T) {
	prev := runtime.GOMAXPROCS(2)
	defer runtime.GOMAXPROCS(prev)
	t.Setenv("GOMAXPROCS", "")

	restore := oneProc(1)
	if got := runtime.GOMAXPROCS(0); got != 1 {
		t.Errorf("one worker: GOMAXPROCS %d, want 1", got)
	}
	restore()
	if got := runtime.GOMAXPROCS(0); got != 2 {
		t.Errorf("after the search: GOMAXPROCS %d, want 2 back", got)
	}

	oneProc(2)()
	if got := runtime.GOMAXPROCS(0); got != 2 {
		t.Errorf("two workers: GOMAXPROCS %d, want 2", got)
	}

	t.Setenv("GOMAXPROCS", "2")
	restore = oneProc(1)
	if got := runtime.GOMAXPROCS(0); got != 2 {
		t.Errorf("GOMAXPROCS set by the user: %d, want 2", got)
	}
	restore()
}
