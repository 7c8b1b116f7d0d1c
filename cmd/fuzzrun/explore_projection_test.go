package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/idemcheck/idemcheck/corpus"
	"github.com/idemcheck/idemcheck/explore"
	"github.com/idemcheck/idemcheck/faults/scenario"
)

// writeScenario writes s as a bare scenario file in dir.
func writeScenario(t *testing.T, dir, name string, s *scenario.Scenario) string {
	t.Helper()
	js, err := scenario.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, js, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestExploreProjectionUsageErrors(t *testing.T) {
	dir := t.TempDir()
	cons, err := explore.World{Events: []string{"ok"}, Groups: 1, WorkersPerGroup: 2}.Scenario()
	if err != nil {
		t.Fatal(err)
	}
	consFile := writeScenario(t, dir, "consumption.json", &scenario.Scenario{Version: scenario.Version, Kind: scenario.KindConsumption, Consumption: cons})
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-projection"}, "-projection: fuzzrun campaign has no such flag; it is a flag of fuzzrun explore"},
		{[]string{"-history", "skew"}, "-history: fuzzrun campaign has no such flag; it is a flag of fuzzrun explore"},
		{[]string{"explore", "-depth", "3", "-copies", "2"}, "-copies: needs -projection"},
		{[]string{"explore", "-depth", "3", "-history", "skew"}, "-history: needs -projection"},
		{[]string{"explore", "-projection", "-history", "nope"}, `-history: "nope" is neither a history (skew, stepBack, ahead, delayed, burst) nor a scenario file`},
		{[]string{"explore", "-projection", "-history", consFile}, "is a consumption scenario; -projection explores a projection history"},
		{[]string{"explore", "-projection", "-copies", "0"}, `-copies: "0" is not a number of copies from 1 to 10`},
		{[]string{"explore", "-projection", "-copies", "11"}, `-copies: "11" is not a number of copies from 1 to 10`},
		{[]string{"explore", "-projection", "-copies", "two"}, `-copies: "two" is not a number`},
		{[]string{"explore", "-projection", "-depth", "3"}, "-depth: shapes a consumption world"},
		{[]string{"explore", "-projection", "-events", "2"}, "-events: shapes a consumption world"},
		{[]string{"explore", "-projection", "-group-workers", "3"}, "-group-workers: shapes a consumption world"},
		{[]string{"explore", "-projection", "-steps", "core"}, "-steps: shapes a consumption world"},
		{[]string{"explore", "-projection", "-engine", "compact"}, "-engine: shapes a consumption world"},
		{[]string{"explore", "-projection", "-workers", "2"}, "-workers: fuzzrun explore -projection judges"},
		{[]string{"explore", "-projection", "-target", "no-dedup"}, "-target: no-dedup has no projection parts to explore"},
		{[]string{"explore", "-projection", "-property", "single-credit"}, "-property: single-credit selects no projection property"},
		{[]string{"explore", "-projection", "-seed", "3"}, "-seed: fuzzrun explore has no such flag"},
	} {
		r := fuzzrun(t, append(c.args, "-corpus", "", "-html", "")...)
		if r.code != exitUsage || !strings.Contains(r.stderr, c.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 naming %q", c.args, r.code, r.stderr, c.want)
		}
	}
}

// The reference passes every delivery order of every history.
func TestExploreProjectionVerifiesTheReference(t *testing.T) {
	r := fuzzrun(t, "explore", "-projection", "-corpus", "", "-html", "")
	if r.code != exitOK {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	for _, h := range explore.ProjectionHistories() {
		for _, want := range []string{"history " + h.Name + ": " + h.Doc + "\njudged 14 delivery orders\n",
			"verified: every delivery order of " + h.Name + " with up to 2 copies, 14 orders, no violation\n"} {
			if !strings.Contains(r.stdout, want) {
				t.Errorf("output lacks %q:\n%s", want, r.stdout)
			}
		}
	}
	if !strings.Contains(r.stdout, "verified: every delivery order of 5 histories with up to 2 copies, 70 orders, no violation") {
		t.Errorf("no summary:\n%s", r.stdout)
	}
	one := decode[projectionExploreReport](t, fuzzrun(t, "explore", "-projection", "-history", "stepBack", "-copies", "3", "-json", "-corpus", "", "-html", ""))
	if !one.Verified || one.Copies != 3 || len(one.Histories) != 1 || one.Histories[0].Name != "stepBack" || one.Histories[0].Orders != 62 {
		t.Fatalf("-json report: %+v", one)
	}
}

// A projection mutant fails a shortest delivery order, which is saved, fails
// again when replayed, and is in the HTML report.
func TestExploreProjectionFindsAMutant(t *testing.T) {
	dir := t.TempDir()
	page := filepath.Join(dir, "report.html")
	cases := filepath.Join(dir, "cases")
	r := fuzzrun(t, "explore", "-projection", "-history", "skew", "-target", "dedup-only-projector", "-corpus", cases, "-html", page)
	if r.code != exitViolation {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{"judged 14 delivery orders", "violation: a shortest failing delivery order of skew is e2 e1:",
		"FAIL skew-safe-final-state", "corpus file: ", "replay: go run ./cmd/fuzzrun replay "} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, r.stdout)
		}
	}
	fs := files(t, cases)
	if len(fs) != 1 {
		t.Fatalf("corpus holds %v", fs)
	}
	file := filepath.Join(cases, fs[0])
	c, err := corpus.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	if c.Target != "dedup-only-projector" || c.Scenario.Kind != scenario.KindProjection {
		t.Fatalf("saved a %s case against %s", c.Scenario.Kind, c.Target)
	}
	if replay := fuzzrun(t, "replay", file, "-target", "dedup-only-projector", "-html", ""); replay.code != exitViolation {
		t.Fatalf("the saved scenario does not fail again: exit %d\n%s", replay.code, replay.stdout)
	}
	html := readFile(t, page)
	for _, want := range []string{`<p class="headline bad" id="headline">violation: a shortest failing delivery order of skew is e2 e1`,
		`data-history="skew" data-status="violated"`, `<table class="timeline" data-kind="projection"`} {
		if !strings.Contains(html, want) {
			t.Errorf("the report lacks %s", want)
		}
	}

	// The saved case, given as a history, is explored again (its replicas
	// ignored), and the -json report gives the failing order.
	j := decode[projectionExploreReport](t, fuzzrun(t, "explore", "-projection", "-history", file, "-target", "hlc-no-merge", "-json", "-corpus", "", "-html", ""))
	if j.Verified || len(j.Histories) != 1 || j.Histories[0].Name != file || j.Histories[0].Verdict == nil ||
		j.Histories[0].Counterexample == nil || len(j.Histories[0].Order) == 0 {
		t.Fatalf("-json report: %+v", j)
	}
}

// Ctrl-C ends the exploration between histories and says how far it got.
func TestExploreProjectionInterrupted(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	r := fuzzrunContext(t, ctx, "explore", "-projection", "-corpus", "", "-html", "")
	if r.code != exitInconclusive || !strings.Contains(r.stdout, "INTERRUPTED by a signal (Ctrl-C or SIGTERM); 0 of 5 histories explored, no violation in them") {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// The count of delivery orders agrees with their enumeration, and a
// history with too many is refused before it takes the machine's memory.
func TestDeliveryOrdersCounted(t *testing.T) {
	for _, h := range explore.ProjectionHistories() {
		var ids []string
		for _, st := range h.History.Steps {
			if st.Op == scenario.OpEmit {
				ids = append(ids, st.ID)
			}
		}
		for copies := 1; copies <= 5; copies++ {
			if got, want := deliveryOrders(h.History, copies).Int64(), int64(len(explore.DeliveryOrders(ids, copies))); got != want {
				t.Errorf("%s, %d copies: counted %d orders, enumerated %d", h.Name, copies, got, want)
			}
		}
	}
	if got := deliveryOrders(explore.ProjectionHistories()[0].History, 10).Int64(); got != 705_410 {
		t.Errorf("skew with 10 copies: %d orders, want 705,410", got)
	}
	r := fuzzrun(t, "explore", "-projection", "-copies", "10", "-corpus", "", "-html", "")
	if want := "-copies: 10 copies give history skew 705410 delivery orders; at most 50000 are judged"; r.code != exitUsage || !strings.Contains(r.stderr, want) {
		t.Fatalf("exit %d, stderr %q; want exit 2 naming %q", r.code, r.stderr, want)
	}
}
