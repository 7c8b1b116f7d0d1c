package main

import (
	"strings"
	"testing"
)

// TestBrokerWithLogConsumer: -consumer with a log consumer plays it live
// on kfake: logoffsets keeps every law, logcommitfirst's commit ahead of
// its effect is confirmed (always: a record is applied only after its
// commit landed), and a broker other than kafka is a usage error.
func TestBrokerWithLogConsumer(t *testing.T) {
	r := fuzzrun(t, "broker", "kafka", "-consumer", "logoffsets", "-checks", "2", "-seed", "1")
	if r.code != exitOK || !strings.Contains(r.stdout, "no law broken in 2 live run(s)") {
		t.Fatalf("logoffsets: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = fuzzrun(t, "broker", "kafka", "-consumer", "logcommitfirst", "-checks", "1", "-seed", "1")
	if r.code != exitViolation || !strings.Contains(r.stdout, "FAIL commit-after-apply") || !strings.Contains(r.stdout, "-seed 1 -checks 1") {
		t.Fatalf("logcommitfirst: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	for _, args := range [][]string{{"broker", "nats", "-consumer", "logoffsets"}, {"broker", "kafka", "-consumer", "logoffsets", "-json"}} {
		r = fuzzrun(t, append(args, "-checks", "1")...)
		if r.code != exitUsage {
			t.Errorf("%v: exit %d, want %d\n%s", args, r.code, exitUsage, r.stderr)
		}
	}
}
