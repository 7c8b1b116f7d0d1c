package main

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/corpus"
)

// startFuzzrun starts this test binary as fuzzrun (see TestMain) and
// returns it with a reader of its stderr lines.
func startFuzzrun(t *testing.T, args ...string) (*exec.Cmd, *bytes.Buffer, <-chan string) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return startProcess(t, exe, []string{execEnv + "=1"}, args...)
}

// startProcess starts exe with args, env added to the environment, and
// returns it with a reader of its stderr lines.
func startProcess(t *testing.T, exe string, env []string, args ...string) (*exec.Cmd, *bytes.Buffer, <-chan string) {
	t.Helper()
	cmd := exec.Command(exe, args...)
	cmd.Env = append(os.Environ(), env...)
	var stdout bytes.Buffer
	cmd.Stdout = &stdout
	errPipe, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	lines := make(chan string, 100)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(errPipe)
		for sc.Scan() {
			lines <- sc.Text()
		}
		_, _ = io.Copy(io.Discard, errPipe)
	}()
	return cmd, &stdout, lines
}

// waitLine waits for a stderr line matching the regular expression want.
func waitLine(t *testing.T, lines <-chan string, want string) {
	t.Helper()
	timeout := time.After(30 * time.Second)
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("fuzzrun ended before printing %q", want)
			}
			if regexp.MustCompile(want).MatchString(l) {
				return
			}
		case <-timeout:
			t.Fatalf("no %q within 30s", want)
		}
	}
}

// exitCode waits for cmd, at most limit.
func exitCode(t *testing.T, cmd *exec.Cmd, limit time.Duration) int {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return ee.ExitCode()
		}
		if err != nil {
			t.Fatal(err)
		}
		return 0
	case <-time.After(limit):
		t.Fatalf("fuzzrun did not end within %v of SIGINT", limit)
	}
	return -1
}

// Ctrl-C (SIGINT) ends a campaign cleanly while it is finding and saving
// violations: the process exits promptly with the report so far (JSON and
// HTML), every corpus file is complete and loads, and no temporary file is
// left behind.
func TestSIGINTEndsCampaignCleanly(t *testing.T) {
	dir := t.TempDir()
	cdir, html := filepath.Join(dir, "corpus"), filepath.Join(dir, "r.html")
	cmd, stdout, lines := startFuzzrun(t, "-target", "no-dedup", "-duration", "2m", "-workers", "2", "-seed", "9",
		"-corpus", cdir, "-html", html, "-json")
	waitLine(t, lines, "violation of")
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	if code := exitCode(t, cmd, 20*time.Second); code != exitViolation {
		t.Fatalf("exit %d after SIGINT with a violation found, want %d\n%s", code, exitViolation, stdout)
	}
	rep := decode[campaignJSON](t, result{stdout: stdout.String()})
	if !rep.Interrupted || len(rep.Violations) == 0 {
		t.Fatalf("report %+v", rep)
	}
	if _, err := os.Stat(html); err != nil {
		t.Fatalf("no HTML report: %v", err)
	}
	for _, name := range files(t, cdir) {
		if strings.HasPrefix(name, ".") {
			t.Errorf("temporary file %s left in the corpus", name)
		}
	}
	if _, err := corpus.LoadDir(cdir); err != nil {
		t.Fatalf("corpus after SIGINT: %v", err)
	}
}

// A campaign that found nothing exits 4 on SIGINT (nothing proven),
// reporting the checks so far.
func TestSIGINTWithoutViolation(t *testing.T) {
	dir := t.TempDir()
	cmd, stdout, lines := startFuzzrun(t, "-duration", "2m", "-workers", "2", "-seed", "11", "-corpus", filepath.Join(dir, "c"),
		"-html", filepath.Join(dir, "r.html"), "-json", "-progress-every", "100ms")
	waitLine(t, lines, ` [1-9][0-9]* checks `) // a progress line after the first hunts
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	if code := exitCode(t, cmd, 20*time.Second); code != exitInconclusive {
		t.Fatalf("exit %d, want %d\n%s", code, exitInconclusive, stdout)
	}
	rep := decode[campaignJSON](t, result{stdout: stdout.String()})
	if !rep.Interrupted || rep.Checks == 0 || rep.Verdict != verdictInterrupted {
		t.Fatalf("report %+v", rep)
	}
}
