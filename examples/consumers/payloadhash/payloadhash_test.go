package payloadhash_test

import (
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/idemcheck/idemcheck/consumertest"
	"github.com/idemcheck/idemcheck/consumertest/handler"
	"github.com/idemcheck/idemcheck/consumertest/laws"
	"github.com/idemcheck/idemcheck/consumertest/scenario"
	"github.com/idemcheck/idemcheck/examples/consumers/ownmessage"
	"github.com/idemcheck/idemcheck/examples/consumers/payloadhash"
)

var consumer = consumertest.Consumer{
	Name:     "payloadhash",
	Schema:   payloadhash.Schema,
	Handler:  handler.HandlerOf(ownmessage.FromHarness, payloadhash.Handle),
	Effects:  consumertest.PerEvent("SELECT message_id, amount_cents FROM payments"),
	EventIDs: ownmessage.EventID,
}

// TestAPayloadCollisionIsLost: Hunt (seed 1) draws two events with one
// payload; the second is skipped as a duplicate of the first.
func TestAPayloadCollisionIsLost(t *testing.T) {
	res, err := consumertest.Hunt(consumer, consumertest.Seed(1), consumertest.CorpusDir(t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	if !res.Failed || res.Law != laws.NothingLost || res.Scenario.Size() > 8 {
		t.Fatalf("want nothing-lost broken by a scenario of at most 8 steps, got:\n%s", res.Report())
	}
	collides := false
	for _, e := range res.Scenario.Events {
		collides = collides || e.Payload != ""
	}
	if !collides {
		t.Fatalf("the counterexample has no payload collision:\n%s", res.Report())
	}
	t.Logf("found after %d scenario(s):\n%s", res.Checks, res.Report())
}

// checkChild runs Check, at its defaults, in the child process
// TestCheckCatchesThePayloadHash starts.
const checkChild = "PAYLOADHASH_CHECK_CHILD"

// TestCheckCatchesThePayloadHash: consumertest.Check at its default
// budget fails the test with nothing-lost (in a child process, seeds 1
// and 2).
func TestCheckCatchesThePayloadHash(t *testing.T) {
	if dir := os.Getenv(checkChild); dir != "" {
		consumertest.Check(t, consumer, consumertest.CorpusDir(dir))
		return
	}
	for _, seed := range []string{"1", "2"} {
		cmd := exec.Command(os.Args[0], "-test.run", "^TestCheckCatchesThePayloadHash$", "-rapid.seed", seed)
		cmd.Env = append(os.Environ(), checkChild+"="+t.TempDir())
		out, err := cmd.CombinedOutput()
		if err == nil || !strings.Contains(string(out), `consumer "payloadhash" breaks nothing-lost`) {
			t.Fatalf("seed %s: Check did not fail the test with nothing-lost (%v):\n%s", seed, err, out)
		}
	}
}

// fuzzEnv switches FuzzPayloadHash on: the consumer is broken, so a plain
// go test must not fail on it; TestFuzzCatchesThePayloadHash runs it.
const fuzzEnv = "IDEMCHECK_FUZZ_BROKEN"

// FuzzPayloadHash fuzzes the broken consumer, with one more seed input: two
// events, the second repeating the first's payload.
func FuzzPayloadHash(f *testing.F) {
	if os.Getenv(fuzzEnv) != "1" {
		f.Skipf("a broken consumer: set %s=1 to fuzz it", fuzzEnv)
	}
	in, err := scenario.FuzzInput(&scenario.Scenario{Version: scenario.Version, Workers: 1, Policy: scenario.DefaultPolicy,
		Events: []scenario.Event{{ID: "e1", User: "u1", Amount: 100}, {ID: "e2", User: "u1", Amount: 100, Payload: "e1"}}})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(in)
	consumertest.Fuzz(f, consumer, consumertest.CorpusDir(f.TempDir()))
}

// TestFuzzCatchesThePayloadHash runs FuzzPayloadHash's seed inputs, as
// plain go test does, in a child process: the collision must fail with
// nothing-lost.
func TestFuzzCatchesThePayloadHash(t *testing.T) {
	if os.Getenv(fuzzEnv) == "1" {
		t.Skip("running inside the child")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^FuzzPayloadHash$")
	cmd.Env = append(os.Environ(), fuzzEnv+"=1")
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 || !strings.Contains(string(out), `consumer "payloadhash" breaks nothing-lost`) {
		t.Fatalf("the seed inputs did not fail with nothing-lost (%v):\n%s", err, out)
	}
}

// TestVerifyCatchesThePayloadHash: an event and one with its payload
// (Verify's fate "same"), one worker, nothing else.
func TestVerifyCatchesThePayloadHash(t *testing.T) {
	res, err := consumertest.Explore(consumer, consumertest.Bounds{Events: []scenario.Fate{scenario.FateOK, scenario.FateSame}, Workers: 1},
		consumertest.CorpusDir(t.TempDir()))
	if err != nil || !res.Failed || res.Law != laws.NothingLost || res.Scenario.Size() > 0 {
		t.Fatalf("want nothing-lost broken by the drain alone (%v):\n%s", err, res.Report())
	}
}
