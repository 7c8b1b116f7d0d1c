package explore

import (
	"context"
	"testing"

	"github.com/idemcheck/idemcheck/impl/system"
	"github.com/idemcheck/idemcheck/properties"
)

// Check is the entry point for a team's own test: it explores target as
// opts says (a World is required; Depth defaults to 6) and fails t with
// the shortest counterexample's report, the scenario as JSON included, or
// logs what was verified.
//
//	func TestMyStoreExhaustively(t *testing.T) {
//		explore.Check(t, system.WithStore("mystore", openMyStore), explore.Options{
//			World: explore.World{Events: []string{"ok"}, Groups: 1, WorkersPerGroup: 2}, Depth: 8})
//	}
func Check(t testing.TB, target system.Target, opts Options) *Result {
	t.Helper()
	if opts.Depth == 0 {
		opts.Depth = 6
	}
	r, err := Explore(context.Background(), target, opts)
	if err != nil {
		t.Fatalf("explore: %v", err)
		return nil
	}
	if cx := r.Counterexample; cx != nil {
		t.Errorf("explore %s: violation at depth %d (a shortest schedule), after %d distinct states:\n%s", target.Name, cx.Depth, r.States,
			properties.Report(cx.Verdict, cx.Outcome, properties.ReportOptions{Scenario: true}))
		return r
	}
	t.Logf("explore %s: verified: every schedule up to depth %d, %d distinct states, %d transitions, no violation", target.Name, r.Depth, r.States, r.Transitions)
	return r
}
