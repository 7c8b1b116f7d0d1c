// Package regen rewrites the saved consumer-level cases of a directory
// after the harness changed what a case's file holds: its trace (what the
// harness prints of a run), the canonical names a reduction gives, or the
// drain's order. Each case is replayed against its target; the scenario
// that still breaks its law (the saved one, or the same with its workers'
// names rotated, which the drain's round robin plays alike) is reduced
// again (consumerharness.Reduce, canonical names included) and saved under
// its new name, with its trace played anew; the old file goes.
//
// The tests that regenerate cases are gated by the environment variable
// Env, so that a plain go test never writes to the tree.
package regen

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/idemcheck/idemcheck/corpus/casefile"
	"github.com/idemcheck/idemcheck/internal/consumerharness"
)

// Env is the environment variable that, set to 1, makes the regenerating
// tests rewrite their cases.
const Env = "IDEMCHECK_REGENERATE"

// Enabled reports whether the regenerating tests run; it skips t when
// they do not.
func Enabled(t testing.TB) bool {
	t.Helper()
	if os.Getenv(Env) != "1" {
		t.Skipf("set %s=1 to rewrite the saved cases", Env)
		return false
	}
	return true
}

// Target is the consumer a case was found against, with its options.
type Target struct {
	Consumer consumerharness.Consumer
	Options  []consumerharness.Option
}

// Cases rewrites every case in dir whose target lookup knows.
func Cases(t testing.TB, dir string, lookup func(target string) (Target, bool)) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		cs, err := casefile.Load(f, nil)
		if err != nil {
			t.Fatal(err)
		}
		if !cs.IsConsumer() {
			continue
		}
		tg, ok := lookup(cs.Target)
		if !ok {
			continue
		}
		path, err := Case(f, cs, tg)
		if err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		t.Logf("%s -> %s", filepath.Base(f), filepath.Base(path))
	}
}

// Case rewrites the case cs saved at path, found against tg.
func Case(path string, cs *casefile.Case, tg Target) (string, error) {
	s, err := consumerharness.UnmarshalScenario(cs.Consumer)
	if err != nil {
		return "", err
	}
	keep := func(x *consumerharness.Scenario) *consumerharness.Result {
		r, err := consumerharness.Replay(tg.Consumer, x, tg.Options...)
		if err != nil || !r.Failed {
			return nil
		}
		if slices.ContainsFunc(r.Breaches, func(b consumerharness.Breach) bool { return b.Law == cs.Law }) {
			r.Law = cs.Law
			return &r
		}
		return nil
	}
	for _, cand := range rotations(s) {
		r := keep(cand)
		if r == nil {
			continue
		}
		if red, rr := consumerharness.Reduce(cand, keep); rr != nil {
			cand, r = red, rr
		}
		if err := os.Remove(path); err != nil {
			return "", err
		}
		return consumerharness.SaveScenario(filepath.Dir(path), cs.Target, cs.Law, r.Summary(), cand, r.Outcome, cs.Seed)
	}
	return "", fmt.Errorf("no longer breaks %s, its workers renamed or not", cs.Law)
}

// rotations are s, then s with its workers' names rotated: worker k
// becomes k-1, worker 1 the last; and so on.
func rotations(s *consumerharness.Scenario) []*consumerharness.Scenario {
	out := []*consumerharness.Scenario{s}
	for r := 1; r < s.Workers; r++ {
		js, _ := s.Marshal()
		c, _ := consumerharness.UnmarshalScenario(js)
		for i, st := range c.Steps {
			if st.Worker >= 1 {
				c.Steps[i].Worker = (st.Worker-1-r+s.Workers)%s.Workers + 1
			}
		}
		out = append(out, c)
	}
	return out
}
