package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// nodeConsumer is the exec: spec of a Node.js example consumer, or skips
// (fails under NODE_REQUIRED=1) when node is missing.
func nodeConsumer(t *testing.T, file string) string {
	t.Helper()
	if _, err := exec.LookPath("node"); err != nil {
		if os.Getenv("NODE_REQUIRED") != "" {
			t.Fatalf("node is not installed, and NODE_REQUIRED is set: %v", err)
		}
		t.Skip("node is not installed: skipping the Node.js consumers (set NODE_REQUIRED=1 to make this a failure)")
	}
	return "exec:node " + filepath.Join("..", "..", "examples", "consumers-node", file)
}

// TestExecConsumerReplay: a saved counterexample of lru.js replays against
// the process as a violation, and passes against insert-first.js.
func TestExecConsumerReplay(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("..", "..", "examples", "consumers-node", "testdata", "consumertest", "lru-single-credit-*.json"))
	if len(files) == 0 {
		t.Fatal("no saved counterexample of lru.js")
	}
	r := fuzzrun(t, "consumer", nodeConsumer(t, "lru.js"), "-replay", files[0], "-html", "")
	if r.code != exitViolation || !strings.Contains(r.stdout, "FAIL single-credit") {
		t.Fatalf("replay against lru.js: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = fuzzrun(t, "consumer", nodeConsumer(t, "insert-first.js"), "-replay", files[0], "-html", "")
	if r.code != exitOK {
		t.Fatalf("replay against insert-first.js: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// TestExecConsumerCampaign: a short campaign against a correct process.
func TestExecConsumerCampaign(t *testing.T) {
	dir := t.TempDir()
	r := fuzzrun(t, "consumer", nodeConsumer(t, "insert-first.js"), "-checks", "3", "-seed", "1", "-corpus", dir, "-html", "")
	if r.code != exitOK || !strings.Contains(r.stdout, "PASS ") {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// TestExecConsumerBadProcess: a process that cannot start, speaks another
// version or declares no effects query is a usage error naming it.
func TestExecConsumerBadProcess(t *testing.T) {
	dir := t.TempDir()
	script := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, c := range []struct {
		spec, says string
	}{
		{"exec:/nonexistent/consumer", "could not start"},
		{"exec:" + script("v3.sh", `read l; echo '{"type":"hello","protocol":3}'; sleep 100`), "speaks protocol version 3; this harness speaks versions 1 to 2"},
		{"exec:" + script("noeffects.sh", `read l; echo '{"type":"hello","protocol":1}'; sleep 100`), "declares no effects query"},
		{"exec:" + script("dies.sh", `echo 'SyntaxError: Unexpected token' >&2; exit 1`), "SyntaxError"},
	} {
		r := fuzzrun(t, "consumer", c.spec, "-checks", "1")
		if r.code != exitUsage || !strings.Contains(r.stderr, c.says) {
			t.Errorf("%s: exit %d, want %d and an error saying %q\n%s", c.spec, r.code, exitUsage, c.says, r.stderr)
		}
	}
}

// TestExecConsumerKeepsState: a process that declares reset but keeps its
// cache across resets is refused before the campaign, naming the first
// line where a reused process played differently from a fresh one; the
// real lru.js, whose reset empties its cache, is not (its campaign fails
// on the consumer's own bug instead).
func TestExecConsumerKeepsState(t *testing.T) {
	r := fuzzrun(t, "consumer", nodeConsumer(t, "testdata/lru-keeps-memory.js"), "-checks", "3", "-seed", "1", "-corpus", t.TempDir())
	if r.code != exitUsage || !strings.Contains(r.stderr, "declares reset in its hello, but a process reused after a reset plays a scenario differently") {
		t.Fatalf("exit %d, want %d and the reset refused\n%s%s", r.code, exitUsage, r.stdout, r.stderr)
	}
	r = fuzzrun(t, "consumer", nodeConsumer(t, "lru.js"), "-checks", "20", "-seed", "1", "-corpus", t.TempDir())
	if r.code != exitViolation || strings.Contains(r.stderr, "declares reset") {
		t.Fatalf("lru.js: exit %d, want %d (single-credit)\n%s%s", r.code, exitViolation, r.stdout, r.stderr)
	}
}
