package consumerharness_test

import (
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/idemcheck/idemcheck/examples/consumers/adr"
	"github.com/idemcheck/idemcheck/internal/consumerharness"
)

// An effects query whose first column is no event id (the amount, say)
// would read as nothing applied, and every healthy event as lost: a false
// alarm on a correct consumer. The harness refuses it as bad input at its
// first scenario, in every entry point, and saves no corpus file.

// amountsFirst is the ADR consumer with its effects read amount first.
func amountsFirst() consumerharness.Consumer {
	return consumerharness.Consumer{
		Name:    "amounts-first",
		Schema:  adr.Schema,
		Handler: adr.Handle,
		Effects: consumerharness.PerEvent("SELECT amount_cents FROM ledger"),
	}
}

// badKey checks err is the bad-input error naming the query, and that dir
// holds no file.
func badKey(t *testing.T, err error, dir string) {
	t.Helper()
	if !errors.Is(err, consumerharness.ErrBadInput) {
		t.Fatalf("want a bad-input error, got %v", err)
	}
	for _, want := range []string{`the effects query "SELECT amount_cents FROM ledger" must return event id first`, "which is no event of the scenario"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error lacks %q: %v", want, err)
		}
	}
	if files, _ := os.ReadDir(dir); len(files) > 0 {
		t.Errorf("a corpus file was saved: %v", files)
	}
}

func TestEffectsNotKeyedByEventIDAreBadInput(t *testing.T) {
	c := amountsFirst()
	t.Run("Hunt", func(t *testing.T) {
		dir := t.TempDir()
		res, err := consumerharness.Hunt(c, consumerharness.Checks(100), consumerharness.Seed(1), consumerharness.CorpusDir(dir))
		badKey(t, err, dir)
		if res.Failed {
			t.Errorf("a verdict was given:\n%s", res.Report())
		}
	})
	t.Run("Replay", func(t *testing.T) {
		dir := t.TempDir()
		s := &consumerharness.Scenario{Version: consumerharness.ScenarioVersion, Workers: 1, Policy: consumerharness.DefaultPolicy,
			Events: []consumerharness.Event{{ID: "e1", User: "u1", Amount: 100}}}
		_, err := consumerharness.Replay(c, s, consumerharness.CorpusDir(dir))
		badKey(t, err, dir)
	})
	t.Run("Explore", func(t *testing.T) {
		dir := t.TempDir()
		res, err := consumerharness.Explore(c, consumerharness.DefaultBounds, consumerharness.CorpusDir(dir))
		badKey(t, err, dir)
		if res.Schedules > 1 {
			t.Errorf("the search went on for %d schedules", res.Schedules)
		}
	})
}

// TestCheckFailsAtOnceOnEffectsNotKeyedByEventID runs Check in a child
// process: it must fail the test with the bad-input error, not with a
// broken law, and save no corpus file.
func TestCheckFailsAtOnceOnEffectsNotKeyedByEventID(t *testing.T) {
	if dir := os.Getenv("EFFECTSKEY_CHILD"); dir != "" {
		consumerharness.Check(t, amountsFirst(), consumerharness.CorpusDir(dir))
		return
	}
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run", "^TestCheckFailsAtOnceOnEffectsNotKeyedByEventID$")
	cmd.Env = append(os.Environ(), "EFFECTSKEY_CHILD="+dir)
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "bad input") || strings.Contains(string(out), "nothing-lost") {
		t.Fatalf("Check did not fail with the bad-input error alone (%v):\n%s", err, out)
	}
	if files, _ := os.ReadDir(dir); len(files) > 0 {
		t.Errorf("a corpus file was saved: %v", files)
	}
}
