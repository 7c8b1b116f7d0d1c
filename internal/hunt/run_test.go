package hunt_test

import (
	"fmt"
	"testing"

	"github.com/idemcheck/idemcheck/internal/hunt"
	"pgregory.net/rapid"
)

func drawInt(t *rapid.T) int { return rapid.IntRange(0, 1000).Draw(t, "n") }

// A failure is shrunk by rapid to the smallest failing scenario; a pass
// plays the whole count; the same seed finds the same failure.
func TestRunShrinksAndCounts(t *testing.T) {
	judge := func(_ *rapid.T, n int, _ bool) hunt.Verdict[int] {
		if n < 10 {
			return hunt.Verdict[int]{}
		}
		return hunt.Verdict[int]{Failure: &n, Summary: "n >= 10"}
	}
	f := hunt.Run(hunt.Config{Name: "ints", Checks: 200, Seed: 7}, drawInt, judge)
	if !f.Failed || f.Failure == nil || *f.Failure != 10 {
		t.Fatalf("failed %v, failure %v: want the failure shrunk to 10\n%s", f.Failed, f.Failure, f.Message)
	}
	if f.Checks < 1 || f.Checks > 200 || f.Seed == 0 {
		t.Fatalf("checks %d, seed %d: want between 1 and 200 checks and rapid's seed", f.Checks, f.Seed)
	}
	again := hunt.Run(hunt.Config{Name: "ints", Checks: 200, Seed: 7}, drawInt, judge)
	if again.Checks != f.Checks || again.Seed != f.Seed {
		t.Fatalf("the same seed found its failure after %d checks (seed %d), then %d (seed %d)", f.Checks, f.Seed, again.Checks, again.Seed)
	}
	pass := hunt.Run(hunt.Config{Name: "ints", Checks: 50, Seed: 7}, drawInt,
		func(*rapid.T, int, bool) hunt.Verdict[int] { return hunt.Verdict[int]{} })
	if pass.Failed || pass.Failure != nil || pass.Checks != 50 || pass.FoundAfter != 0 {
		t.Fatalf("a pass: failed %v after %d checks (found after %v), want 50 checks\n%s", pass.Failed, pass.Checks, pass.FoundAfter, pass.Message)
	}
}

// A verdict that says Stop ends the hunt at that scenario: it is not
// shrunk, and no later scenario is judged.
func TestRunStopsWithoutShrinking(t *testing.T) {
	judged := 0
	f := hunt.Run(hunt.Config{Name: "stop", Checks: 100, Seed: 3}, drawInt, func(_ *rapid.T, n int, shrinking bool) hunt.Verdict[int] {
		judged++
		if shrinking {
			t.Error("a stopped hunt was shrunk")
		}
		if n < 10 {
			return hunt.Verdict[int]{}
		}
		return hunt.Verdict[int]{Failure: &n, Summary: fmt.Sprint(n), Stop: true}
	})
	if !f.Failed || !f.Stopped || f.Failure == nil || *f.Failure < 10 || f.Checks != judged {
		t.Fatalf("failed %v stopped %v failure %v after %d checks (%d judged)", f.Failed, f.Stopped, f.Failure, f.Checks, judged)
	}
}
