package main

// The command line never says more than it did: these tests run the
// fuzzrun binary a user builds (go build -tags servers ./cmd/fuzzrun) and
// read what it prints and its exit status.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/internal/consumerharness"
)

// built is cmd/fuzzrun as go build makes it (fuzzrunBinary); TestMain
// removes its directory.
var built struct {
	once      sync.Once
	dir, path string
	err       error
}

// fuzzrunBinary builds cmd/fuzzrun with go build, with -tags servers so
// that fuzzrun broker is in it, once per test binary.
func fuzzrunBinary(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command to build cmd/fuzzrun with")
	}
	built.once.Do(func() {
		if built.dir, built.err = os.MkdirTemp("", "fuzzrun-bin-"); built.err != nil {
			return
		}
		built.path = filepath.Join(built.dir, "fuzzrun")
		out, err := exec.Command("go", "build", "-tags", serversTag, "-o", built.path, ".").CombinedOutput()
		if err != nil {
			built.err = fmt.Errorf("go build ./cmd/fuzzrun: %v\n%s", err, out)
		}
	})
	if built.err != nil {
		t.Fatal(built.err)
	}
	return built.path
}

// runBinary runs the built fuzzrun in dir ("" for this package's) with env
// added to the environment, and waits for it (at most 5 minutes).
func runBinary(t *testing.T, dir string, env []string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, fuzzrunBinary(t), args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		code = ee.ExitCode()
	case err != nil:
		t.Fatalf("fuzzrun %s: %v", shellJoin(args), err)
	}
	return result{code: code, stdout: out.String(), stderr: errb.String()}
}

// want fails t unless r exited with code and its stdout (and stderr) hold
// every string of says and none of never.
func (r result) want(t *testing.T, what string, code int, says, never []string) {
	t.Helper()
	both := r.stdout + r.stderr
	ok := r.code == code
	for _, s := range says {
		ok = ok && strings.Contains(both, s)
	}
	for _, s := range never {
		ok = ok && !strings.Contains(both, s)
	}
	if !ok {
		t.Errorf("%s: exit %d (want %d); want %q, never %q in\nstdout:\n%s\nstderr:\n%s", what, r.code, code, says, never, r.stdout, r.stderr)
	}
}

// Every long-running command stopped by SIGINT or SIGTERM says it was
// interrupted and what it did so far, and exits 4: nothing violated in
// what it did, nothing proven beyond.
func TestEveryLongRunInterruptedSaysSo(t *testing.T) {
	exe := fuzzrunBinary(t)
	none := []string{"-html", "", "-corpus", ""}
	for _, c := range []struct {
		name  string
		args  []string
		ready string // a stderr line once it has done some work
		after time.Duration
		sig   syscall.Signal
		says  []string
	}{
		{"consumer", append([]string{"consumer", "adr", "-duration", "60s", "-seed", "1"}, none...), `^fuzzrun: [1-9][0-9]* scenarios`, 0, syscall.SIGTERM,
			[]string{"INTERRUPTED adr: stopped by a signal after ", " scenarios in ", "of a budget of 1m0s", "coverage: ", "nothing proven beyond them"}},
		{"consumer -explore", append([]string{"consumer", "adr", "-explore", "-progress-every", "100ms"}, none...), `^explore adr: `, 0, syscall.SIGINT,
			[]string{"NOT VERIFIED adr: interrupted", "searched: ", "coverage: "}},
		{"broker", []string{"broker", "nats", "-duration", "60s", "-seed", "1", "-corpus", ""}, `^fuzzrun: broker nats`, 2 * time.Second, syscall.SIGINT,
			[]string{"INTERRUPTED: stopped by a signal after ", "scenarios in "}},
		{"campaign", append([]string{"campaign", "-duration", "2m", "-workers", "2", "-seed", "1", "-progress-every", "100ms"}, none...), ` [1-9][0-9]* checks `, 0, syscall.SIGTERM,
			[]string{"(interrupted)", "INTERRUPTED: stopped by a signal after ", "checks in "}},
		{"explore", append([]string{"explore", "-duration", "2m", "-progress-every", "100ms"}, none...), `^explore: depth ([2-9]|[1-9][0-9])`, 0, syscall.SIGINT,
			[]string{"INTERRUPTED at depth ", "by a signal (Ctrl-C or SIGTERM): every schedule up to depth ", "nothing proven beyond depth "}},
		{"explore -projection", append([]string{"explore", "-projection", "-copies", "7"}, none...), `^fuzzrun: explore -projection`, time.Second, syscall.SIGTERM,
			[]string{"INTERRUPTED by a signal (Ctrl-C or SIGTERM)", "histories explored"}},
		{"mutants", append([]string{"mutants", "-progress-every", "100ms"}, none...), `^fuzzrun mutants `, 0, syscall.SIGINT,
			[]string{"INTERRUPTED by a signal (Ctrl-C or SIGTERM): the table covers the "}},
	} {
		t.Run(c.name, func(t *testing.T) {
			cmd, stdout, lines := startProcess(t, exe, nil, c.args...)
			waitLine(t, lines, c.ready)
			time.Sleep(c.after)
			if err := cmd.Process.Signal(c.sig); err != nil {
				t.Fatal(err)
			}
			go func() {
				for range lines {
				}
			}()
			code := exitCode(t, cmd, time.Minute)
			r := result{code: code, stdout: stdout.String()}
			r.want(t, c.name, exitInconclusive, c.says, []string{"PASS", "VERIFIED " + "adr within", "no violation found."})
		})
	}
}

// A run that played nothing, or left a property it was asked to check
// unchecked, is no pass: it says nothing was proven and exits 4.
func TestZeroWorkIsNeverAPass(t *testing.T) {
	none := []string{"-html", "", "-corpus", ""}
	r := runBinary(t, "", nil, append([]string{"consumer", "adr", "-duration", "1ns"}, none...)...)
	r.want(t, "consumer -duration 1ns", exitInconclusive, []string{"INCONCLUSIVE adr: 0 scenarios played in ", "nothing was proven"}, []string{"PASS"})

	r = runBinary(t, "", nil, append([]string{"campaign", "-duration", "1ns"}, none...)...)
	r.want(t, "campaign -duration 1ns", exitInconclusive, []string{"INCONCLUSIVE: 0 checks played", "unchecked"}, []string{"no violation found"})
	if regexp.MustCompile(`\bpass\b`).MatchString(r.stdout) {
		t.Errorf("campaign -duration 1ns shows a property as passed:\n%s", r.stdout)
	}
	var rep campaignJSON
	if r := runBinary(t, "", nil, append([]string{"campaign", "-duration", "1ns", "-json"}, none...)...); json.Unmarshal([]byte(r.stdout), &rep) != nil ||
		rep.Verdict != verdictInconclusive || rep.Exit != exitInconclusive || len(rep.Unchecked) == 0 {
		t.Errorf("campaign -duration 1ns -json: exit %d, %+v", r.code, rep)
	}

	// One check judges one kind: the properties of the others are never
	// checked, and the campaign says so.
	r = runBinary(t, "", nil, append([]string{"campaign", "-duration", "0", "-checks", "1", "-workers", "1", "-seed", "1"}, none...)...)
	r.want(t, "campaign -checks 1", exitInconclusive, []string{"were never checked (", "hlc-laws", "unchecked"}, []string{"no violation found"})

	r = runBinary(t, "", nil, "broker", "nats", "-duration", "1ns", "-corpus", "")
	r.want(t, "broker -duration 1ns", exitInconclusive, []string{"INCONCLUSIVE: 0 scenarios played", "unchecked"}, []string{"holds"})

	r = runBinary(t, "", nil, append([]string{"explore", "-max-memory", "1MiB"}, none...)...)
	r.want(t, "explore with its memory spent", exitInconclusive, []string{"INCONCLUSIVE: stopped by the memory budget (-max-memory 1 MB;", "no depth fully explored"}, []string{"verified"})

	r = runBinary(t, "", nil, append([]string{"explore", "-projection", "-max-memory", "1MiB"}, none...)...)
	r.want(t, "explore -projection with its memory spent", exitInconclusive, []string{"NOT VERIFIED: stopped by the memory budget", "0 of 5 histories explored"}, []string{"verified:"})

	r = runBinary(t, "", nil, append([]string{"consumer", "adr", "-explore", "-max-memory", "1MiB"}, none...)...)
	r.want(t, "consumer -explore with its memory spent", exitInconclusive, []string{"NOT VERIFIED adr: the memory budget (1 MB) ran out"}, []string{"VERIFIED adr within"})
}

// A counterexample whose corpus file cannot be written is shown in full
// (its trace, its seed and how to draw it again by seed) before the error,
// and the run exits 3; the seed's command finds the same counterexample.
func TestACounterexampleNotSavedIsStillShown(t *testing.T) {
	dir := t.TempDir()
	blocker := filepath.Join(dir, "file")
	if err := os.WriteFile(blocker, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	r := runBinary(t, "", nil, "consumer", "splitcheck", "-corpus", filepath.Join(blocker, "corpus"), "-html", "", "-seed", "1", "-checks", "400")
	r.want(t, "an unwritable -corpus", exitInternal, []string{"FAIL single-credit", "trace of the scenario", "seed: ", "save the counterexample", "not a directory"},
		[]string{"go test", "-rapid.seed"})
	m := regexp.MustCompile(`(?m)^seed: (\d+) \(go run \./cmd/fuzzrun (consumer splitcheck -seed \d+ -checks 1)\)$`).FindStringSubmatch(r.stdout)
	if m == nil {
		t.Fatalf("no replay by seed in:\n%s", r.stdout)
	}
	if strings.Index(r.stdout, "trace of the scenario") > strings.Index(r.stdout, "seed: ") {
		t.Errorf("the seed comes before the trace:\n%s", r.stdout)
	}
	again := runBinary(t, "", nil, append(strings.Fields(m[2]), "-corpus", dir, "-html", "")...)
	again.want(t, "the replay by seed", exitViolation, []string{"FAIL single-credit", "corpus file: " + dir, "replay: go run ./cmd/fuzzrun consumer splitcheck -replay "}, nil)
	if trace(r.stdout) != trace(again.stdout) || trace(r.stdout) == "" {
		t.Errorf("the seed's command found another counterexample:\n%s\nthen:\n%s", trace(r.stdout), trace(again.stdout))
	}
}

// trace is the trace of a consumer's counterexample in a report.
func trace(report string) string {
	_, after, _ := strings.Cut(report, "trace of the scenario")
	before, _, _ := strings.Cut(after, "\nseed: ")
	return before
}

// A process consumer that answers its hello and then hangs inside a
// delivery is a handler that hangs: law runs, with its scenario saved and
// replayable, as for a Go handler; not a consumer that failed to start.
func TestAHangingProcessConsumerBreaksRuns(t *testing.T) {
	nodeConsumer(t, "idemcheck.js") // skips without node
	script, err := filepath.Abs(filepath.Join("testdata", "hang-consumer.js"))
	if err != nil {
		t.Fatal(err)
	}
	spec := "exec:node " + script
	dir := t.TempDir()
	env := []string{"IDEMCHECK_EXEC_TIMEOUT=300ms"}
	r := runBinary(t, "", env, "consumer", spec, "-checks", "20", "-seed", "1", "-corpus", dir, "-html", "")
	r.want(t, "a hanging process", exitViolation, []string{"FAIL runs: handler-hangs", "hung handling e", "hung on request 1 of delivery 1", "corpus file: " + dir, "replay: "},
		[]string{"failed to start", "(after )", "not starting", "go test"})
	saved := files(t, dir)
	if len(saved) != 1 {
		t.Fatalf("corpus holds %v, want the one counterexample", saved)
	}
	again := runBinary(t, "", env, "consumer", spec, "-replay", filepath.Join(dir, saved[0]), "-html", "")
	again.want(t, "its replay", exitViolation, []string{"FAIL runs: handler-hangs"}, []string{"failed to start"})
}

// Every search has a time and a memory budget and defaults for both;
// its verdict says which bound it finished.
func TestSearchesHaveBudgets(t *testing.T) {
	none := []string{"-html", "", "-corpus", ""}
	// fuzzrun explore as the README shows it: no depth, deeper and deeper
	// until the budget.
	r := runBinary(t, "", nil, append([]string{"explore", "-duration", "2s"}, none...)...)
	r.want(t, "explore -duration 2s", exitOK, []string{"stopped by the time budget (-duration 2s) at depth "}, nil)
	m := regexp.MustCompile(`at depth (\d+): every schedule up to depth (\d+) explored, \d+ distinct states, no violation`).FindStringSubmatch(r.stdout)
	if m == nil {
		t.Fatalf("no depth explored in:\n%s", r.stdout)
	}
	at, done := atoi(t, m[1]), atoi(t, m[2])
	if done < 1 || at != done+1 {
		t.Errorf("stopped at depth %d with depth %d explored", at, done)
	}
	// A depth asked for and not reached is not verified.
	r = runBinary(t, "", nil, append([]string{"explore", "-depth", "1000000000", "-duration", "2s"}, none...)...)
	r.want(t, "explore -depth 1000000000", exitInconclusive, []string{"NOT VERIFIED to depth 1000000000: stopped by the time budget (-duration 2s) at depth "}, []string{"verified:"})
	// The memory budget stops the search too.
	r = runBinary(t, "", nil, append([]string{"explore", "-max-memory", "100MB", "-duration", "2m"}, none...)...)
	r.want(t, "explore -max-memory 100MB", exitOK, []string{"stopped by the memory budget (-max-memory 100 MB; ", "every schedule up to depth "}, nil)
	// A world whose states run out is verified in full without a depth.
	r = runBinary(t, "", nil, append([]string{"explore", "-events", "1", "-group-workers", "1", "-steps", "produce,deliver,step"}, none...)...)
	r.want(t, "a small world", exitOK, []string{"verified: every reachable state, "}, nil)
	r = runBinary(t, "", nil, append([]string{"explore", "-projection", "-copies", "7", "-duration", "1s"}, none...)...)
	r.want(t, "explore -projection -duration 1s", exitInconclusive, []string{"NOT VERIFIED: stopped by the time budget (-duration 1s)", " of 5 histories explored"}, []string{"verified: every delivery order of 5 histories"})
	r = runBinary(t, "", nil, "explore", "-h")
	r.want(t, "explore -h", exitOK, []string{"-duration D", "-max-memory SIZE", "-depth N"}, nil)
}

func atoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// What a user gets wrong in a file or on the command line is named in
// their words: no "EOF", no Go struct, no flags they did not give.
func TestMessagesNameWhatWasWrong(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	saved, err := os.ReadFile(filepath.Join("..", "..", "corpus", "consumers", "lru-single-credit-98e93023b1f6.json"))
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(saved, &doc); err != nil {
		t.Fatal(err)
	}
	edit := func(name string, f func(c map[string]any)) string {
		var d map[string]any
		_ = json.Unmarshal(saved, &d)
		f(d["consumer"].(map[string]any))
		b, _ := json.MarshalIndent(d, "", "  ")
		return write(name, string(b))
	}
	empty := write("empty.json", "")
	truncated := write("truncated.json", string(saved[:len(saved)/2]))
	noAttempts := edit("attempts.json", func(c map[string]any) { c["policy"].(map[string]any)["maxAttempts"] = 0 })
	w9 := edit("w9.json", func(c map[string]any) { c["steps"] = []any{map[string]any{"op": "run", "worker": "w9"}} })
	leaks := []string{"EOF", "Go struct", "{MaxAttempts", "unmarshal"}
	for _, c := range []struct {
		args []string
		says string
	}{
		{[]string{"replay", empty}, "empty.json: the file is empty: it holds no JSON"},
		{[]string{"replay", truncated}, "truncated.json: the JSON ends early, at line "},
		{[]string{"consumer", "lru", "-replay", empty}, "empty.json: the file is empty"},
		{[]string{"consumer", "lru", "-replay", truncated}, "the file is cut short (truncated)"},
		{[]string{"consumer", "lru", "-replay", noAttempts}, "policy.maxAttempts 0 (at least 1"},
		{[]string{"consumer", "lru", "-replay", w9}, `steps[0].worker: got string "w9", want an integer`},
		{[]string{"consumer", "adr", "-explore", "-replay", w9}, "-replay and -explore are different modes"},
		{[]string{"consumer", "exec:/nonexistent/consumer"}, "fuzzrun: consumer exec:/nonexistent/consumer: "},
	} {
		r := runBinary(t, "", nil, c.args...)
		r.want(t, shellJoin(c.args), exitUsage, []string{c.says}, append(leaks, "-list", "-mutants", "-consumer:"))
	}
}

// The CLI's hints are its own commands: no go test -run ... -rapid.seed,
// no -consumer NAME; and the coverage count is the count of its rows.
func TestHintsAreTheCLIsOwn(t *testing.T) {
	r := runBinary(t, "", nil, "list")
	r.want(t, "list", exitOK, []string{"consumers (fuzzrun consumer NAME):", "consumer laws (fuzzrun consumer NAME judges"}, []string{"-consumer NAME"})

	r = runBinary(t, "", nil, "consumer", "nounique", "-checks", "400", "-seed", "3", "-corpus", t.TempDir(), "-html", "")
	r.want(t, "a counterexample", exitViolation, []string{"seed: ", "(go run ./cmd/fuzzrun consumer nounique -seed ", "replay: go run ./cmd/fuzzrun consumer nounique -replay "},
		[]string{"go test", "-rapid.seed", "IDEMCHECK_REPLAY"})

	r = runBinary(t, "", nil, "consumer", "adr", "-checks", "400", "-seed", "1", "-corpus", "", "-html", "")
	m := regexp.MustCompile(`coverage: (\d+) of the (\d+) situations every consumer should reach were reached`).FindStringSubmatch(r.stdout)
	if r.code != exitOK || m == nil {
		t.Fatalf("exit %d, no coverage line:\n%s", r.code, r.stdout)
	}
	_, table, _ := strings.Cut(r.stdout, m[0])
	required, _, _ := strings.Cut(table, "also reached")
	rows, reached := 0, 0
	for _, l := range strings.Split(required, "\n") {
		f := strings.Fields(l)
		if len(f) != 2 || !strings.HasPrefix(l, "  ") {
			continue
		}
		rows++
		if f[1] != "0" {
			reached++
		}
	}
	if rows != atoi(t, m[2]) || reached != atoi(t, m[1]) || rows != len(consumerharness.Situations) {
		t.Errorf("%q heads %d rows, %d of them reached:\n%s", m[0], rows, reached, r.stdout)
	}
}
