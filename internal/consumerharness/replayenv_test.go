package consumerharness

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/idemcheck/idemcheck/impl/contract/handler"
)

// TestReplayCommandNamesThePackageFromTheModuleRoot: the replay command
// names the test's package as go test does from the module's root, found
// by the go.mod above the working directory (the package's, under go
// test), and the test by an anchored pattern of its full name.
func TestReplayCommandNamesThePackageFromTheModuleRoot(t *testing.T) {
	const file = "testdata/consumertest/ledger-single-credit-654a4053153b.json"
	if got, want := replayCommand(file, "TestLedger"),
		"IDEMCHECK_REPLAY="+file+" go test ./internal/consumerharness -run '^TestLedger$'"; got != want {
		t.Errorf("from this package:\n got %s\nwant %s", got, want)
	}

	mod := t.TempDir()
	if err := os.WriteFile(filepath.Join(mod, "go.mod"), []byte("module example.com/payments\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	pkg := filepath.Join(mod, "services", "ledger")
	if err := os.MkdirAll(pkg, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Chdir(pkg)
	for _, c := range []struct{ name, want string }{
		{"TestLedger", "IDEMCHECK_REPLAY=" + file + " go test ./services/ledger -run '^TestLedger$'"},
		{"TestLedger/on_sqlite", "IDEMCHECK_REPLAY=" + file + " go test ./services/ledger -run '^TestLedger$/^on_sqlite$'"},
		{"TestLedger.v2", "IDEMCHECK_REPLAY=" + file + ` go test ./services/ledger -run '^TestLedger\.v2$'`},
		{"hunt/ledger", "consumertest.Replay(c, s) with s from consumertest.LoadScenario(\"" + file + "\"); or IDEMCHECK_REPLAY=" + file + " go test ./services/ledger -run TestOfThatConsumer"},
	} {
		if got := replayCommand(file, c.name); got != c.want {
			t.Errorf("%s:\n got %s\nwant %s", c.name, got, c.want)
		}
	}
	if got, want := replayCommand("/tmp/a b/x.json", "TestLedger"), "IDEMCHECK_REPLAY='/tmp/a b/x.json' go test ./services/ledger -run '^TestLedger$'"; got != want {
		t.Errorf("a path with a space:\n got %s\nwant %s", got, want)
	}
	t.Chdir(mod)
	if got, want := replayCommand(file, "TestLedger"), "IDEMCHECK_REPLAY="+file+" go test . -run '^TestLedger$'"; got != want {
		t.Errorf("at the module's root:\n got %s\nwant %s", got, want)
	}
	if got, want := fuzzReplayCommand("FuzzLedger/seed#2", false, false), "go test . -run '^FuzzLedger$/^seed#2$'"; got != want {
		t.Errorf("a seed input:\n got %s\nwant %s", got, want)
	}
	if got, want := fuzzReplayCommand("FuzzLedger", true, true), "go test . -run '^FuzzLedger$' (a seed input of consumertest.Fuzz: plain go test replays it)"; got != want {
		t.Errorf("a seed input while fuzzing:\n got %s\nwant %s", got, want)
	}
	if got := fuzzReplayCommand("FuzzLedger", true, false); !strings.HasPrefix(got, "go test . -run '^FuzzLedger$/^INPUT$', INPUT being the file the fuzzing engine writes below to testdata/fuzz/FuzzLedger") {
		t.Errorf("a new input while fuzzing: %s", got)
	}
}

// counting is a consumer of name whose handler counts its deliveries.
func counting(name string, n *int) Consumer {
	c := adrConsumer()
	c.Name = name
	c.Handler = func(ctx context.Context, db *sql.DB, m handler.Message) error {
		*n++
		return adr(ctx, db, m)
	}
	return c
}

// TestCheckIgnoresAReplayCaseNotItsOwn: with IDEMCHECK_REPLAY set, a
// Check replays the case when it is its consumer's, and otherwise checks
// nothing and passes: another consumer's case, a path that is no file
// from its package, a case of the store properties.
func TestCheckIgnoresAReplayCaseNotItsOwn(t *testing.T) {
	dir := t.TempDir()
	mine, err := SaveScenario(dir, "mine", LawSingleCredit, "a saved case", busy, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	theirs, err := SaveScenario(dir, "theirs", LawSingleCredit, "a saved case", busy, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	bare := filepath.Join(dir, "bare.json")
	js, err := busy.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bare, js, 0o644); err != nil {
		t.Fatal(err)
	}
	stores, err := filepath.Glob(filepath.Join("..", "..", "corpus", "cases", "*.json"))
	if err != nil || len(stores) == 0 {
		t.Fatalf("no case of the store properties in ../../corpus/cases (%v)", err)
	}
	store := stores[0]
	for _, c := range []struct {
		file   string
		played bool
	}{
		{mine, true},
		{bare, true},
		{theirs, false},
		{filepath.Join("testdata", "consumertest", "no-such-case.json"), false},
		{store, false},
	} {
		var n int
		t.Run(filepath.Base(c.file), func(t *testing.T) {
			t.Setenv(ReplayEnv, c.file)
			Check(t, counting("mine", &n))
		})
		if played := n > 0; played != c.played {
			t.Errorf("%s: played %v (%d deliveries), want %v", c.file, played, n, c.played)
		}
	}

	// A file that is there but is no case fails the test: it is bad input,
	// not another test's case.
	junk := filepath.Join(dir, "junk.json")
	if err := os.WriteFile(junk, []byte("not json"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := replayCase(junk, adrConsumer()); err == nil {
		t.Error("a file that is no case was taken for one")
	}
	// The module's root is the second place a relative path is read from.
	t.Chdir("backend")
	path, s, other, err := replayCase(filepath.Join("testdata", "consumertest", "no-such-case.json"), adrConsumer())
	if err != nil || s != nil || !strings.Contains(other, "no such file") {
		t.Errorf("a missing file: %q %v %q %v", path, s, other, err)
	}
}

// replayHelperEnv makes TestReplayHelperFails a failing test: the test
// that TestTheReplayCommandWorksFromTheModuleRoot runs.
const replayHelperEnv = "IDEMCHECK_TEST_REPLAY_HELPER"

// TestReplayHelperFails checks a consumer that never applies anything,
// saving its counterexample where the environment says (a path relative
// to this package's directory, as the default testdata/consumertest is).
func TestReplayHelperFails(t *testing.T) {
	dir := os.Getenv(replayHelperEnv)
	if dir == "" {
		t.Skip("run by TestTheReplayCommandWorksFromTheModuleRoot")
	}
	c := Consumer{Name: "never", Schema: ledgerSchema, Handler: neverApplies, Effects: PerEvent("SELECT event_id, amount_cents FROM ledger")}
	Check(t, c, Checks(5), Seed(1), CorpusDir(dir))
}

var replayLine = regexp.MustCompile(`(?m)^\s*replay: IDEMCHECK_REPLAY=(\S+) go test (\./internal/consumerharness) -run '([^']+)'$`)

// TestTheReplayCommandWorksFromTheModuleRoot runs a failing Check, then
// the replay command its report prints, as printed, from the module's
// root: it replays that case (and fails with it). In the same go test, the
// Check of another package, which the file is not a case of, passes
// without checking anything.
func TestTheReplayCommandWorksFromTheModuleRoot(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: runs go test")
	}
	if os.Getenv(replayHelperEnv) != "" {
		t.Skip("inside the helper")
	}
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	corpus, err := filepath.Rel(wd, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestReplayHelperFails$", "-test.count=1")
	cmd.Env = append(os.Environ(), replayHelperEnv+"="+corpus, ReplayEnv+"=")
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Fatalf("the failing Check exited with %v, want status 1:\n%s", err, out)
	}
	m := replayLine.FindSubmatch(out)
	if m == nil {
		t.Fatalf("no replay line naming ./internal/consumerharness in:\n%s", out)
	}
	file, pkg, pattern := string(m[1]), string(m[2]), string(m[3])
	if pattern != "^TestReplayHelperFails$" {
		t.Errorf("the replay line's pattern is %q", pattern)
	}
	if !strings.HasPrefix(file, corpus) {
		t.Errorf("the replay line names %s, not a file of %s", file, corpus)
	}

	root := moduleRoot(wd)
	run := exec.Command("go", "test", "-count=1", "-v", pkg, "./examples/consumers/adr", "-run", pattern+"|^TestADRConsumerIsNeverFlagged$")
	run.Dir = root
	run.Env = append(os.Environ(), ReplayEnv+"="+file, replayHelperEnv+"="+corpus)
	out, err = run.CombinedOutput()
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Fatalf("the replay command exited with %v, want status 1:\n%s", err, out)
	}
	got := string(out)
	for _, want := range []string{
		ReplayEnv + "=" + file + `: replaying it against consumer "never"`,
		"FAIL healthy-applied",
		"--- FAIL: TestReplayHelperFails",
		"--- PASS: TestADRConsumerIsNeverFlagged",
		`is not a case of consumer "adr" (`,
		"ok  \tgithub.com/idemcheck/idemcheck/examples/consumers/adr",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the replay's output lacks %q", want)
		}
	}
	if strings.Contains(got, "trace of the scenario (") && strings.Count(got, "FAIL healthy-applied") > 1 {
		t.Errorf("the replay played more than the one case")
	}
	if t.Failed() {
		t.Logf("output:\n%s", got)
	}
}

// fuzzHelperEnv switches FuzzReplayHelper on: a fuzz test of a consumer
// that never applies anything, whose seed inputs fail.
const fuzzHelperEnv = "IDEMCHECK_TEST_FUZZ_HELPER"

func FuzzReplayHelper(f *testing.F) {
	if os.Getenv(fuzzHelperEnv) == "" {
		f.Skip("run by TestAFailingSeedNamesACommandThatReplaysIt")
	}
	Fuzz(f, Consumer{Name: "never", Schema: ledgerSchema, Handler: neverApplies, Effects: PerEvent("SELECT event_id, amount_cents FROM ledger")},
		CorpusDir(""), NoReduce())
}

var fuzzReplayLine = regexp.MustCompile(`(?m)^\s*replay: go test \./internal/consumerharness -run '([^']+)'`)

// TestAFailingSeedNamesACommandThatReplaysIt: a seed input that fails,
// while fuzzing (go test -fuzz: the test binary run with -test.fuzz) or
// not, prints a go test command; run as printed, it replays the seeds and
// fails.
func TestAFailingSeedNamesACommandThatReplaysIt(t *testing.T) {
	if os.Getenv(fuzzHelperEnv) != "" {
		t.Skip("inside the helper")
	}
	run := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(os.Args[0], args...)
		cmd.Env = append(os.Environ(), fuzzHelperEnv+"=1", ReplayEnv+"=")
		out, err := cmd.CombinedOutput()
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != 1 {
			t.Fatalf("%q exited with %v, want status 1:\n%s", args, err, out)
		}
		return string(out)
	}
	// Fuzzing: the test binary without go test's instrumentation fuzzes
	// all the same (without coverage guidance); the seeds run first.
	out := run("-test.run=^$", "-test.fuzz=^FuzzReplayHelper$", "-test.fuzztime=1x", "-test.fuzzcachedir="+t.TempDir())
	if !strings.Contains(out, "failure while testing seed corpus entry: FuzzReplayHelper/seed#") {
		t.Fatalf("no seed failed while fuzzing:\n%s", out)
	}
	m := fuzzReplayLine.FindStringSubmatch(out)
	if m == nil || m[1] != "^FuzzReplayHelper$" {
		t.Fatalf("while fuzzing, no replay line naming the fuzz test:\n%s", out)
	}
	// Plain go test names each seed; its command fails on that seed alone.
	out = run("-test.run=" + m[1])
	m = fuzzReplayLine.FindStringSubmatch(out)
	if m == nil || !strings.HasPrefix(m[1], "^FuzzReplayHelper$/^seed#") {
		t.Fatalf("no replay line naming a seed:\n%s", out)
	}
	out = run("-test.run="+m[1], "-test.v")
	if n := strings.Count(out, "--- FAIL: FuzzReplayHelper/"); n != 1 {
		t.Errorf("%s replays %d inputs, want the one seed:\n%s", m[1], n, out)
	}
}
