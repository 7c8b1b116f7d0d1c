package main

import (
	"strings"
	"testing"
)

// fuzzrun consumer exec:COMMAND -explore model-checks a process consumer
// on the pool's processes, reset between workers and schedules, after the
// same reset check as a campaign: the verdicts are a fresh process's.

// TestExecConsumerExplore: insert-first.js is verified within small
// bounds; effect-then-mark.js is found breaking single-credit, as a
// campaign finds it.
func TestExecConsumerExplore(t *testing.T) {
	r := fuzzrun(t, append([]string{"consumer", nodeConsumer(t, "insert-first.js"), "-explore", "-corpus", t.TempDir(), "-html", "", "-json"}, small...)...)
	rep := decode[consumerExploreJSON](t, r)
	if r.code != exitOK || !rep.Verified || rep.Schedules == 0 {
		t.Fatalf("insert-first.js: exit %d, verified %v after %d schedules; want %d and verified\n%s", r.code, rep.Verified, rep.Schedules, exitOK, r.stderr)
	}
	r = fuzzrun(t, append([]string{"consumer", nodeConsumer(t, "effect-then-mark.js"), "-explore", "-corpus", t.TempDir(), "-html", "", "-json"}, small...)...)
	rep = decode[consumerExploreJSON](t, r)
	if r.code != exitViolation || !rep.Failed || rep.Law != "single-credit" {
		t.Fatalf("effect-then-mark.js: exit %d, failed %v, law %q; want %d and single-credit\n%s", r.code, rep.Failed, rep.Law, exitViolation, r.stderr)
	}
}

// TestExecConsumerExploreKeepsState: a process that declares reset but
// keeps its cache across resets is refused before the model check, as
// before a campaign: reused, it would make the search's verdict depend on
// which process played a schedule.
func TestExecConsumerExploreKeepsState(t *testing.T) {
	r := fuzzrun(t, append([]string{"consumer", nodeConsumer(t, "testdata/lru-keeps-memory.js"), "-explore", "-corpus", t.TempDir(), "-html", ""}, small...)...)
	if r.code != exitUsage || !strings.Contains(r.stderr, "declares reset in its hello, but a process reused after a reset plays a scenario differently") {
		t.Fatalf("exit %d, want %d and the reset refused\n%s%s", r.code, exitUsage, r.stdout, r.stderr)
	}
}
