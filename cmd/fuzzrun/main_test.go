package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestMain lets the test binary stand in for fuzzrun: a campaign started by
// a test re-executes os.Executable — this binary — for its workers, with
// execEnv set, and so does the signal test for the fuzzrun under test.
func TestMain(m *testing.M) {
	if os.Getenv(execEnv) == "1" {
		prepareRapid()
		os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
	}
	// What a run writes by default (outputDir) goes to a directory of the
	// tests', not the user's cache; the fuzzrun processes the tests start
	// inherit it.
	out, err := os.MkdirTemp("", "fuzzrun-test-output-")
	if err != nil {
		panic(err)
	}
	os.Setenv(outputEnv, out)
	code := m.Run()
	os.RemoveAll(out)
	if built.dir != "" {
		os.RemoveAll(built.dir)
	}
	os.Exit(code)
}

// result is one in-process run of fuzzrun.
type result struct {
	code           int
	stdout, stderr string
}

func fuzzrun(t *testing.T, args ...string) result {
	t.Helper()
	return fuzzrunContext(t, context.Background(), args...)
}

func fuzzrunContext(t *testing.T, ctx context.Context, args ...string) result {
	t.Helper()
	var out, errb bytes.Buffer
	code := runContext(ctx, args, &out, &errb)
	return result{code: code, stdout: out.String(), stderr: errb.String()}
}

// decode parses a -json report.
func decode[T any](t *testing.T, r result) T {
	t.Helper()
	var v T
	if err := json.Unmarshal([]byte(r.stdout), &v); err != nil {
		t.Fatalf("stdout is not the JSON report: %v\nstdout:\n%s\nstderr:\n%s", err, r.stdout, r.stderr)
	}
	return v
}

// files lists dir's entries, hidden ones included.
func files(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		out = append(out, e.Name())
	}
	return out
}

// corpusCase is a committed corpus file, for the replay tests.
func corpusCase(t *testing.T, prefix string) string {
	t.Helper()
	matches, _ := filepath.Glob(filepath.Join("..", "..", "corpus", "cases", prefix+"-*.json"))
	if len(matches) == 0 {
		t.Fatalf("no committed corpus file %s-*.json", prefix)
	}
	return matches[0]
}

func mustContain(t *testing.T, what, s string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(s, w) {
			t.Errorf("%s lacks %q:\n%s", what, w, s)
		}
	}
}
