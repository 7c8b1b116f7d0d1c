package conformance_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/idemcheck/idemcheck/faults/scenario"
	"github.com/idemcheck/idemcheck/impl/system/resolve"
	"github.com/idemcheck/idemcheck/properties"
)

// nodeExample returns "node /abs/path/examples/SCRIPT", or skips when node
// is missing — unless NODE_REQUIRED is set, as in CI, where a missing node
// must not pass silently.
func nodeExample(t testing.TB, script string) string {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		if os.Getenv("NODE_REQUIRED") != "" {
			t.Fatalf("node is not installed, and NODE_REQUIRED is set: %v", err)
		}
		t.Skip("node is not installed: skipping the Node.js examples (set NODE_REQUIRED=1 to make this a failure)")
	}
	path, err := filepath.Abs(filepath.Join("..", "examples", script))
	if err != nil {
		t.Fatal(err)
	}
	return node + " " + path
}

// projectionHunt hunts every projection property over checks drawn
// scenarios, counting only laws (all of them when none is given).
func projectionHunt(target string, checks int, laws ...string) properties.HuntOptions {
	return properties.HuntOptions{Kind: scenario.KindProjection, Properties: properties.ForKind(scenario.KindProjection),
		Laws: laws, Checks: scaled(checks), Seed: seed, NoReduce: len(laws) > 0}
}

// TestNodeHLCPassesTheLaws: the example Node.js HLC, through the hlc
// process protocol, keeps every projection property — the HLC laws, and the
// reference projectors ordering by its stamps — without a guard and with a
// 500 ms max-offset guard that refuses stamps too far ahead.
func TestNodeHLCPassesTheLaws(t *testing.T) {
	command := nodeExample(t, "node-hlc/hlc.js")
	for _, spec := range []string{"exec-hlc:" + command, "exec-hlc:env HLC_MAX_OFFSET_MS=500 " + command} {
		res := properties.Hunt(openTarget(t, spec), projectionHunt(spec, 40))
		if res.Failed {
			t.Fatalf("%s failed %s after %d checks: %s\n%s", spec, res.Law, res.Checks, res.Message,
				properties.Report(res.Verdict, res.Outcome, properties.ReportOptions{Scenario: true}))
		}
		t.Logf("%s passed every projection property over %d scenarios in %v", spec, res.Checks, res.Elapsed)
	}
}

// TestNodeHLCBugsAreCaught: the same HLC with a deliberate bug, through the
// same process path, is caught by the law the bug breaks.
func TestNodeHLCBugsAreCaught(t *testing.T) {
	command := nodeExample(t, "node-hlc/hlc.js")
	// drop-counter is caught by monotonic in TestNodeHLCEveryBrokenLawReported.
	for _, c := range []struct{ spec, law string }{
		{"exec-hlc:env HLC_MAX_OFFSET_MS=500 HLC_BUG=refuse-delayed " + command, "hlc-laws/refuse-only-beyond-max-offset"},
	} {
		res := properties.Hunt(openTarget(t, c.spec), projectionHunt(c.spec, 500, c.law))
		if !res.Failed {
			t.Errorf("%s survived %d checks of %s", c.spec, res.Checks, c.law)
			continue
		}
		t.Logf("%s caught by %s after %d checks", c.spec, res.Law, res.Checks)
	}
}

// TestNodeProjectorPassesTheProperties: the example Node.js projector,
// through the projector process protocol, ends every order where its
// causal history ends and its replicas converge.
func TestNodeProjectorPassesTheProperties(t *testing.T) {
	spec := "exec-projector:" + nodeExample(t, "node-projector/projector.js")
	res := properties.Hunt(openTarget(t, spec), projectionHunt(spec, 100))
	if res.Failed {
		t.Fatalf("%s failed %s after %d checks: %s\n%s", spec, res.Law, res.Checks, res.Message,
			properties.Report(res.Verdict, res.Outcome, properties.ReportOptions{Scenario: true}))
	}
	t.Logf("%s passed every projection property over %d scenarios in %v", spec, res.Checks, res.Elapsed)
}

// TestNodeProjectorBugIsCaught: the projector ordering by the producer's
// wall clock (last write wins) is caught through the process.
func TestNodeProjectorBugIsCaught(t *testing.T) {
	spec := "exec-projector:env PROJECTOR_BUG=lww-timestamp " + nodeExample(t, "node-projector/projector.js")
	res := properties.Hunt(openTarget(t, spec), projectionHunt(spec, 500, "skew-safe-final-state/causal-final-state"))
	if !res.Failed {
		t.Fatalf("%s survived %d checks", spec, res.Checks)
	}
	t.Logf("%s caught by %s after %d checks", spec, res.Law, res.Checks)
}

// TestNodePartsWrongProtocol: a store adapter given as an HLC, an HLC given
// as a projector, and an HLC given a negative max offset are clear errors
// when the target is resolved, naming the request and, for the bad option,
// saying what is wrong with it.
func TestNodePartsWrongProtocol(t *testing.T) {
	state := filepath.Join(t.TempDir(), "state.json")
	for _, spec := range []string{
		"exec-hlc:env IDEMCHECK_STATE_FILE=" + state + " " + nodeExample(t, "node-inbox/inbox.js"),
		"exec-projector:" + nodeExample(t, "node-hlc/hlc.js"),
	} {
		_, err := resolve.Resolve(spec)
		if err == nil || !strings.Contains(err.Error(), "request 1 (hello)") || !strings.Contains(err.Error(), "does not speak version 1 of the") {
			t.Errorf("%s resolved: %v, want an error naming the hello request", spec, err)
			continue
		}
		t.Logf("%s: %v", spec, err)
	}
	spec := "exec-hlc:env HLC_MAX_OFFSET_MS=-5 " + nodeExample(t, "node-hlc/hlc.js")
	if _, err := resolve.Resolve(spec); err == nil || !strings.Contains(err.Error(), "HLC_MAX_OFFSET_MS=-5: want a whole number of milliseconds, 0 or more") {
		t.Errorf("%s: %v, want the example's own message about the bad option", spec, err)
	}
}

// TestNodeHLCEveryBrokenLawReported: a clock that breaks several laws has
// each reported with a counterexample of its own, shrunk through the
// process, not just the first one found.
func TestNodeHLCEveryBrokenLawReported(t *testing.T) {
	spec := "exec-hlc:env HLC_BUG=drop-counter " + nodeExample(t, "node-hlc/hlc.js")
	hlcLaws, _ := properties.ByName("hlc-laws")
	results := properties.HuntEach(openTarget(t, spec), properties.HuntOptions{Kind: scenario.KindProjection,
		Properties: []properties.Property{hlcLaws}, Checks: scaled(40), Seed: seed})
	laws := map[string]bool{}
	for _, r := range results {
		if r.Scenario == nil || laws[r.Law] {
			t.Fatalf("%s: no counterexample of its own (%s)", r.Law, r.Message)
		}
		laws[r.Law] = true
		t.Logf("%s after %d checks, counterexample of size %d", r.Law, r.Checks, r.Scenario.Size())
	}
	if !laws["hlc-laws/monotonic"] || len(laws) < 2 {
		t.Fatalf("laws reported %v, want monotonic and at least one more", laws)
	}
}

// TestNodePartsDeterministic: the same projection scenario gives the same
// trace and result through the Node HLC and projector, run after run in the
// one process each serves.
func TestNodePartsDeterministic(t *testing.T) {
	for _, spec := range []string{
		"exec-hlc:" + nodeExample(t, "node-hlc/hlc.js"),
		"exec-projector:" + nodeExample(t, "node-projector/projector.js"),
	} {
		sameTraces(t, openTarget(t, spec), scenario.KindProjection, 10)
	}
}
