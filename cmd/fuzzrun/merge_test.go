package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

// shardRuns runs consumer c's model check within small as n shards in
// process, each writing its certificate in dir, and returns the paths.
func shardRuns(t *testing.T, c string, n int, dir string, want int, extra ...string) []string {
	t.Helper()
	var certs []string
	for i := range n {
		cert := filepath.Join(dir, fmt.Sprintf("c%d.json", i))
		args := append([]string{"consumer", c, "-explore", "-corpus", "", "-html", "", "-workers", "1", "-shard", fmt.Sprintf("%d/%d", i, n), "-certificate", cert}, small...)
		r := fuzzrun(t, append(args, extra...)...)
		if r.code != want && !(want == exitViolation && r.code == exitOK) {
			t.Fatalf("shard %d/%d: exit %d\n%s%s", i, n, r.code, r.stdout, r.stderr)
		}
		if r.code == exitOK && !strings.Contains(r.stdout, fmt.Sprintf("SHARD %d/%d VERIFIED %s: no schedule below its prefixes", i, n, c)) {
			t.Errorf("shard %d/%d says it verified more than its part:\n%s", i, n, r.stdout)
		}
		if !strings.Contains(r.stderr, "certificate written to "+cert) {
			t.Errorf("shard %d/%d does not say where its certificate went:\n%s", i, n, r.stderr)
		}
		certs = append(certs, cert)
	}
	return certs
}

// scenarioJSON compacts a scenario's JSON, to compare two.
func scenarioJSON(t *testing.T, v any) string {
	t.Helper()
	js, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(js)
}

// TestMergedShardsGiveTheUnsplitCounterexample: splitcheck searched whole
// and as 3 shards merged (given in any order) breaks the same law with
// the same scenario, preemptions and steps.
func TestMergedShardsGiveTheUnsplitCounterexample(t *testing.T) {
	whole := fuzzrun(t, append([]string{"consumer", "splitcheck", "-explore", "-corpus", "", "-html", "", "-workers", "1", "-json"}, small...)...)
	if whole.code != exitViolation {
		t.Fatalf("unsplit: exit %d\n%s", whole.code, whole.stderr)
	}
	w := decode[consumerExploreJSON](t, whole)
	certs := shardRuns(t, "splitcheck", 3, t.TempDir(), exitViolation)
	for _, order := range [][]string{certs, {certs[2], certs[0], certs[1]}} {
		r := fuzzrun(t, append([]string{"merge", "-json"}, order...)...)
		if r.code != exitViolation {
			t.Fatalf("merge: exit %d\n%s%s", r.code, r.stdout, r.stderr)
		}
		m := decode[mergeReport](t, r)
		ce := m.Counterexample
		var sc any
		if err := json.Unmarshal(ce.Scenario, &sc); err != nil {
			t.Fatal(err)
		}
		var ws any
		wjs, _ := w.Scenario.Marshal()
		_ = json.Unmarshal(wjs, &ws)
		if ce.Law != w.Law || ce.Preemptions != w.Preemptions || ce.Steps != w.Steps || scenarioJSON(t, sc) != scenarioJSON(t, ws) {
			t.Errorf("merged %s %d %d %s\nunsplit %s %d %d %s", ce.Law, ce.Preemptions, ce.Steps, ce.Scenario, w.Law, w.Preemptions, w.Steps, wjs)
		}
	}
}

// TestMergedShardsVerifyACorrectConsumer: insertfirst verified whole is
// verified by its 3 shards merged, which search at least as many
// schedules; a shard missing, given twice or of other bounds is named.
func TestMergedShardsVerifyACorrectConsumer(t *testing.T) {
	whole := fuzzrun(t, append([]string{"consumer", "insertfirst", "-explore", "-corpus", "", "-html", "", "-workers", "1", "-json"}, small...)...)
	if whole.code != exitOK {
		t.Fatalf("unsplit: exit %d\n%s", whole.code, whole.stderr)
	}
	w := decode[consumerExploreJSON](t, whole)
	dir := t.TempDir()
	certs := shardRuns(t, "insertfirst", 3, dir, exitOK)
	r := fuzzrun(t, append([]string{"merge", "-json"}, certs...)...)
	m := decode[mergeReport](t, r)
	if r.code != exitOK || m.Verdict != "VERIFIED" || m.Schedules < w.Schedules {
		t.Fatalf("merge: exit %d, %+v; unsplit %d schedules", r.code, m, w.Schedules)
	}
	if r := fuzzrun(t, "merge", certs[0], certs[2]); r.code != exitInconclusive || !strings.Contains(r.stdout, "NOT VERIFIED insertfirst: shard 1/3 missing") {
		t.Errorf("a shard missing: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := fuzzrun(t, "merge", certs[0], certs[1], certs[2], certs[1]); r.code != exitUsage || !strings.Contains(r.stdout, "shard 1/3 given twice") {
		t.Errorf("a shard twice: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	other := shardRuns(t, "insertfirst", 3, t.TempDir(), exitOK, "-crashes", "0")
	if r := fuzzrun(t, "merge", certs[0], certs[1], other[2]); r.code != exitUsage || !strings.Contains(r.stdout, "other bounds") {
		t.Errorf("shards of other bounds: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	bad := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(bad, []byte(`{"format": "something else"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if r := fuzzrun(t, "merge", certs[0], bad); r.code != exitUsage || !strings.Contains(r.stderr, bad) {
		t.Errorf("not a certificate: exit %d\n%s", r.code, r.stderr)
	}
}

// TestShardFlagsAreChecked: -shard must be i/N within range, and
// -certificate needs it.
func TestShardFlagsAreChecked(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-shard", "3/3"}, "-shard: shard \"3/3\" is not i/N"},
		{[]string{"-shard", "x"}, "-shard:"},
		{[]string{"-certificate", "c.json"}, "-certificate: a certificate is a shard's"},
	} {
		r := fuzzrun(t, append([]string{"consumer", "adr", "-explore"}, c.args...)...)
		if r.code != exitUsage || !strings.Contains(r.stderr, c.want) {
			t.Errorf("%v: exit %d\n%s", c.args, r.code, r.stderr)
		}
	}
	if r := fuzzrun(t, "consumer", "adr", "-shard", "0/2"); r.code != exitUsage || !strings.Contains(r.stderr, "give -explore") {
		t.Errorf("-shard without -explore: exit %d\n%s", r.code, r.stderr)
	}
}

// TestShardsAsProcesses: the shards of splitcheck run as N fuzzrun
// processes at once, each writing its certificate where it says by
// default, and fuzzrun merge gives the unsplit counterexample.
func TestShardsAsProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("builds cmd/fuzzrun")
	}
	dir := t.TempDir()
	whole := runBinary(t, dir, nil, append([]string{"consumer", "splitcheck", "-explore", "-corpus", "", "-html", "", "-workers", "1", "-json"}, small...)...)
	w := decode[consumerExploreJSON](t, whole)
	const n = 3
	var wg sync.WaitGroup
	codes := make([]int, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := runBinary(t, dir, nil, append([]string{"consumer", "splitcheck", "-explore", "-corpus", "", "-html", "", "-workers", "1", "-shard", fmt.Sprintf("%d/%d", i, n)}, small...)...)
			codes[i] = r.code
		}()
	}
	wg.Wait()
	if slices.Contains(codes, exitUsage) || slices.Contains(codes, exitInternal) {
		t.Fatalf("shards' exits %v", codes)
	}
	var certs []string
	for i := range n {
		certs = append(certs, filepath.Join(dir, defaultCertificate("splitcheck", i, n)))
	}
	r := runBinary(t, dir, nil, append([]string{"merge", "-json"}, certs...)...)
	m := decode[mergeReport](t, r)
	wjs, _ := w.Scenario.Marshal()
	var a, b any
	_ = json.Unmarshal(wjs, &a)
	_ = json.Unmarshal(m.Counterexample.Scenario, &b)
	if r.code != exitViolation || m.Counterexample.Law != w.Law || scenarioJSON(t, a) != scenarioJSON(t, b) {
		t.Errorf("merge: exit %d, %s %s; unsplit %s %s", r.code, m.Counterexample.Law, m.Counterexample.Scenario, w.Law, wjs)
	}
}
