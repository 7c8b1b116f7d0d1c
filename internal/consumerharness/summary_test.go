package consumerharness

import (
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"testing"
)

// summaryHelperEnv makes TestSummaryHelperPasses run: the test that
// TestAPassingCheckLogsASummary runs under go test -v.
const summaryHelperEnv = "IDEMCHECK_TEST_SUMMARY_HELPER"

func TestSummaryHelperPasses(t *testing.T) {
	if os.Getenv(summaryHelperEnv) == "" {
		t.Skip("run by TestAPassingCheckLogsASummary")
	}
	Check(t, adrConsumer(), Checks(20), CorpusDir(t.TempDir()))
}

var summaryLine = regexp.MustCompile(`(?m)^\s+\S+\.go:\d+: consumer "adr": no law broken in 20 scenario\(s\); reached (\d+) of (\d+) coverage situations( \(never: [a-z, -]+\))?; seed (\d+) \(-rapid\.seed=(\d+) draws them again\)$`)

// TestAPassingCheckLogsASummary: under go test -v, a passing Check logs
// one line: the scenarios played, the coverage situations reached of all,
// the seed. The same seed plays the same scenarios: the summary says so
// again with -rapid.seed.
func TestAPassingCheckLogsASummary(t *testing.T) {
	if os.Getenv(summaryHelperEnv) != "" {
		t.Skip("inside the helper")
	}
	run := func(args ...string) (reached, total, seed string) {
		t.Helper()
		cmd := exec.Command(os.Args[0], append([]string{"-test.run=^TestSummaryHelperPasses$", "-test.v", "-test.count=1"}, args...)...)
		cmd.Env = append(os.Environ(), summaryHelperEnv+"=1", ReplayEnv+"=")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("the passing Check: %v\n%s", err, out)
		}
		m := summaryLine.FindStringSubmatch(string(out))
		if m == nil {
			t.Fatalf("no summary line in:\n%s", out)
		}
		if m[4] != m[5] || m[4] == "0" {
			t.Errorf("the summary's seeds: %s and %s", m[4], m[5])
		}
		if m[2] != strconv.Itoa(len(Situations)) {
			t.Errorf("the summary's total is %s, want %d situations", m[2], len(Situations))
		}
		return m[1], m[2], m[4]
	}
	reached, _, seed := run()
	again, _, seedAgain := run("-rapid.seed=" + seed)
	if seedAgain != seed || again != reached {
		t.Errorf("-rapid.seed=%s: reached %s with seed %s, the first run %s", seed, again, seedAgain, reached)
	}
}

func TestPassSummary(t *testing.T) {
	cov := map[string]int{}
	for _, s := range Situations[1:] {
		cov[s] = 3
	}
	r := Result{Consumer: "ledger", Checks: 100, Seed: 42, Coverage: cov}
	want := `consumer "ledger": no law broken in 100 scenario(s); reached ` + strconv.Itoa(len(Situations)-1) + " of " + strconv.Itoa(len(Situations)) +
		" coverage situations (never: " + Situations[0] + "); seed 42 (-rapid.seed=42 draws them again)"
	if got := r.PassSummary(); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}
