package main

import (
	"strings"
	"testing"
)

// A log consumer's model check: -rebalances bounds the rebalances, and
// the counterexample names the one that breaks the consumer; the flags
// start from the log's default bounds (no duplicates, which a log has
// none of).
func TestConsumerExploreFindsALogRebalance(t *testing.T) {
	dir := t.TempDir()
	r := fuzzrun(t, "consumer", "logapplythencommit", "-explore", "-corpus", dir, "-html", "", "-events", "ok", "-crashes", "0", "-failures", "0", "-rebalances", "1")
	if r.code != exitViolation || !strings.Contains(r.stdout, "<= 1 rebalance(s) of 1 partition(s)") || !strings.Contains(r.stdout, "FAIL single-credit") ||
		!strings.Contains(r.stdout, "the group rebalances: p0 moves from w1 to w2") {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

func TestConsumerExploreLogUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"consumer", "logoffsets", "-explore", "-partitions", "9"}, "-partitions: \"9\" is not a number of partitions"},
		{[]string{"consumer", "logoffsets", "-explore", "-rebalances", "x"}, `-rebalances: "x" is not a whole number`},
		{[]string{"consumer", "logoffsets", "-rebalances", "1"}, "-rebalances: bounds a consumer's model check"},
	} {
		r := fuzzrun(t, tc.args...)
		if r.code != exitUsage || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit %d saying %q", tc.args, r.code, r.stderr, exitUsage, tc.want)
		}
	}
}
