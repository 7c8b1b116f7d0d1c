package main

import (
	"os"
	"strings"
	"testing"
)

// The Redis example consumer is reachable by name in a build with the
// servers (go run -tags servers ./cmd/fuzzrun consumer redissetnx; the
// tests of fuzzrun link them always): it is listed, it needs
// IDEMCHECK_REDIS_ADDR, and with it the campaign catches the lost event.
func TestConsumerRedisSetNX(t *testing.T) {
	r := fuzzrun(t, "list")
	mustContain(t, "list", r.stdout, "redissetnx", "broken: nothing-lost", "Redis SET NX")

	addr := os.Getenv("IDEMCHECK_REDIS_ADDR")
	if addr == "" {
		t.Setenv("IDEMCHECK_REDIS_ADDR", "")
		r := fuzzrun(t, "consumer", "redissetnx", "-checks", "10")
		if r.code != exitUsage || !strings.Contains(r.stderr, "IDEMCHECK_REDIS_ADDR is not set") {
			t.Errorf("without IDEMCHECK_REDIS_ADDR: exit %d, stderr:\n%s", r.code, r.stderr)
		}
		t.Skip("IDEMCHECK_REDIS_ADDR is not set: skipping the campaign against the Redis SET NX consumer (set it to 127.0.0.1:6379 to run it)")
	}
	dir := t.TempDir()
	r = fuzzrun(t, "consumer", "redissetnx", "-checks", "500", "-seed", "1", "-corpus", dir, "-html", "")
	if r.code != exitViolation {
		t.Fatalf("exit %d, want %d (a counterexample)\nstdout:\n%s\nstderr:\n%s", r.code, exitViolation, r.stdout, r.stderr)
	}
	mustContain(t, "consumer redissetnx", r.stdout, "FAIL nothing-lost", "redis SET ", "corpus file: "+dir,
		"replay: go run -tags servers ./cmd/fuzzrun consumer redissetnx -replay ")
	if fs := files(t, dir); len(fs) != 1 {
		t.Errorf("the corpus holds %q, want the one counterexample", fs)
	}
}
