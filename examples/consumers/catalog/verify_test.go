package catalog_test

import (
	"path/filepath"
	"testing"

	"github.com/idemcheck/idemcheck/consumertest"
	"github.com/idemcheck/idemcheck/consumertest/laws"
	"github.com/idemcheck/idemcheck/consumertest/scenario"
	"github.com/idemcheck/idemcheck/corpus"
	"github.com/idemcheck/idemcheck/examples/consumers/catalog"
)

// The model checker against the example consumers: every broken one is
// found within the default bounds, with a counterexample no longer than
// the one the randomized hunt found and reduced (corpus/consumers) in the
// same world (as many events and workers: the lengths of schedules of
// other worlds do not compare); every
// correct one is verified within smaller bounds (the default bounds are
// measured by the CLI, see docs/model-checking-consumers.md).

// huntSize is a saved counterexample's size, and its world.
type huntSize struct{ steps, events, workers int }

// huntSizes are the sizes of the counterexamples of corpus/consumers, the
// smallest per consumer.
func huntSizes(t *testing.T) map[string]huntSize {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(corpusDir, "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]huntSize{}
	for _, f := range files {
		c, err := corpus.Load(f)
		if err != nil {
			t.Fatal(err)
		}
		s, err := scenario.Load(f)
		if err != nil {
			t.Fatal(err)
		}
		if n, ok := out[c.Target]; !ok || s.Size() < n.steps {
			out[c.Target] = huntSize{s.Size(), len(s.Events), s.Workers}
		}
	}
	return out
}

func TestVerifyFindsEveryBrokenExample(t *testing.T) {
	sizes := huntSizes(t)
	for _, e := range catalog.All() {
		if e.Correct() {
			continue
		}
		t.Run(e.Name, func(t *testing.T) {
			res, err := consumertest.Explore(e.Consumer, e.VerifyBounds(), e.Options()...)
			if err != nil {
				t.Fatal(err)
			}
			if !res.Failed {
				t.Fatalf("not found within its bounds:\n%s", res.Report())
			}
			if !breaksLaw(res.Breaches, e.Law) {
				t.Errorf("the counterexample breaks %s, not %s:\n%s", res.Law, e.Law, res.Report())
			}
			if hunt, ok := sizes[e.Name]; ok && hunt.events == len(res.Scenario.Events) && hunt.workers == res.Scenario.Workers && res.Scenario.Size() > hunt.steps {
				t.Errorf("counterexample of %d step(s), the hunt's in the same world has %d:\n%s", res.Scenario.Size(), hunt.steps, res.Report())
			}
			again, err := consumertest.Replay(e.Consumer, res.Scenario, e.Options()...)
			if err != nil || !again.Failed || again.Outcome.Trace.String() != res.Outcome.Trace.String() {
				t.Fatalf("the counterexample does not replay with the same trace (%v):\n%s", err, again.Report())
			}
			t.Logf("%s in %d step(s), %d preemption(s); %d schedules in %s", res.Law, res.Scenario.Size(), res.Preemptions, res.Schedules, res.Elapsed)
		})
	}
}

func breaksLaw(bs []laws.Breach, law string) bool {
	for _, b := range bs {
		if b.Law == law {
			return true
		}
	}
	return false
}

// TestVerifyProvesTheCorrectExamples verifies every correct example
// through Verify, as a team's test calls it, within the bounds a unit test
// affords (Entry.QuickBounds): for adr, insertfirst and balance, one event
// (and its duplicate), two workers, two preemptions, a crash and an
// injected failure. The heavier bounds are the CLI's (fuzzrun consumer
// NAME -explore: Entry.VerifyBounds).
func TestVerifyProvesTheCorrectExamples(t *testing.T) {
	for _, e := range catalog.All() {
		if !e.Correct() {
			continue
		}
		t.Run(e.Name, func(t *testing.T) {
			consumertest.Verify(t, e.Consumer, e.QuickBounds(), append(e.Options(), consumertest.CorpusDir(t.TempDir()))...)
		})
	}
}
