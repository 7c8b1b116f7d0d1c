package markfirst_test

import (
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/idemcheck/idemcheck/consumertest"
	"github.com/idemcheck/idemcheck/consumertest/laws"
	"github.com/idemcheck/idemcheck/examples/consumers/markfirst"
)

var consumer = consumertest.Consumer{
	Name:    "markfirst",
	Schema:  markfirst.Schema,
	Handler: markfirst.Handle,
	Effects: consumertest.PerEvent("SELECT event_id, amount_cents FROM ledger"),
	Dedupe:  "SELECT event_id FROM processed_events",
}

func TestMarkFirstLosesTheEventOnACrash(t *testing.T) {
	res, err := consumertest.Hunt(consumer, consumertest.Checks(2000), consumertest.Seed(1))
	if err != nil {
		t.Fatal(err)
	}
	if !res.Failed || res.Law != laws.NothingLost || res.Scenario.Size() > 8 {
		t.Fatalf("want LawNothingLost broken by a scenario of at most 8 steps, got:\n%s", res.Report())
	}
	t.Logf("found after %d scenario(s):\n%s", res.Checks, res.Report())
}

// fuzzEnv switches FuzzMarkFirst on. The consumer is broken, so a plain go
// test must not run the crasher the fuzzing engine found; the test below
// runs it on purpose.
const fuzzEnv = "IDEMCHECK_FUZZ_BROKEN"

// FuzzMarkFirst is the team's fuzz test, as it would write it:
//
//	IDEMCHECK_FUZZ_BROKEN=1 go test -fuzz=FuzzMarkFirst ./examples/consumers/markfirst
//
// finds the lost event (the seed inputs alone do not) and leaves the
// failing input in testdata/fuzz/FuzzMarkFirst.
func FuzzMarkFirst(f *testing.F) {
	if os.Getenv(fuzzEnv) != "1" {
		f.Skipf("a broken consumer: set %s=1 to fuzz it", fuzzEnv)
	}
	consumertest.Fuzz(f, consumer)
}

// A crasher go test -fuzz=FuzzMarkFirst found (testdata/fuzz/FuzzMarkFirst,
// committed as the engine wrote it) replays with plain go test and fails
// with Check's report, reduced. The test runs this test binary again, with
// FuzzMarkFirst switched on, as a team's go test would run it.
func TestFuzzCrasherReplaysWithTheReport(t *testing.T) {
	if os.Getenv(fuzzEnv) == "1" {
		t.Skip("running inside the replay")
	}
	const crasher = "ade23c194c739155"
	cmd := exec.Command(os.Args[0], "-test.run=^FuzzMarkFirst$", "-test.v")
	cmd.Env = append(os.Environ(), fuzzEnv+"=1")
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Fatalf("the replay exited with %v, want status 1 (a failed test):\n%s", err, out)
	}
	got := string(out)
	for _, want := range []string{
		"--- FAIL: FuzzMarkFirst/" + crasher,
		`consumer "markfirst" breaks nothing-lost (scenario of 4 step(s) decoded from the input, reduced to 3)`,
		"FAIL nothing-lost: an event was lost: no effect and not dead-lettered",
		"expected (-want) vs consumer (+got):",
		`"e1": 1,`, `"e1": 0,`, // go-cmp varies its spacing on purpose: the values only
		"trace of the scenario (3 step(s), 1 worker(s), 1 event(s)) on sqlite:",
		"   4. w1 crashes at exec INSERT INTO ledger",
		"corpus file: testdata/fuzz/FuzzMarkFirst/" + crasher,
		"replay: go test ./examples/consumers/markfirst -run '^FuzzMarkFirst$/^" + crasher + "$'",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the replay's output lacks %q", want)
		}
	}
	// The seeds alone do not find this bug: only the crasher fails.
	if n := strings.Count(got, "--- FAIL: FuzzMarkFirst/"); n != 1 {
		t.Errorf("%d inputs failed, want the crasher alone", n)
	}
	if t.Failed() {
		t.Logf("output:\n%s", got)
	}
}
