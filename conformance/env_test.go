package conformance_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/idemcheck/idemcheck/faults/runner"
	"github.com/idemcheck/idemcheck/faults/scenario"
	"github.com/idemcheck/idemcheck/impl/system"
	"github.com/idemcheck/idemcheck/impl/system/resolve"
	"github.com/idemcheck/idemcheck/properties"
)

// seed fixes rapid's seed, so each test draws the same scenarios every run.
const seed = 20261121

// postgresDSN returns the PostgreSQL connection string, or skips.
func postgresDSN(t testing.TB) string {
	t.Helper()
	dsn := os.Getenv(resolve.PostgresDSNEnv)
	if dsn == "" {
		t.Skipf("%s is unset: skipping the PostgreSQL tests (set it to a connection string such as postgres://postgres@127.0.0.1:5432/test?sslmode=disable; .ci/run does)", resolve.PostgresDSNEnv)
	}
	return dsn
}

// nodeCommand returns the command line of the example Node.js adapter, or
// skips when node is missing — unless NODE_REQUIRED is set, as in CI, where
// a missing node must not pass silently.
func nodeCommand(t testing.TB) string {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		if os.Getenv("NODE_REQUIRED") != "" {
			t.Fatalf("node is not installed, and NODE_REQUIRED is set: %v", err)
		}
		t.Skip("node is not installed: skipping the Node.js example adapter (set NODE_REQUIRED=1 to make this a failure)")
	}
	script, err := filepath.Abs(filepath.Join("..", "examples", "node-inbox", "inbox.js"))
	if err != nil {
		t.Fatal(err)
	}
	return node + " " + script
}

// scaled is n scenarios, fewer under the race detector.
func scaled(n int) int { return max(1, n/slowdown) }

// resolve resolves a target spec or fails.
func openTarget(t testing.TB, spec string) system.Target {
	t.Helper()
	tg, err := resolve.Resolve(spec)
	if err != nil {
		t.Fatal(err)
	}
	return tg
}

// huntClean runs every consumption property over checks drawn scenarios
// against target and fails with the shrunk counterexample if one fails.
func huntClean(t *testing.T, target system.Target, checks int) {
	t.Helper()
	res := properties.Hunt(target, properties.HuntOptions{Kind: scenario.KindConsumption,
		Properties: properties.ForKind(scenario.KindConsumption), Checks: scaled(checks), Seed: seed})
	if res.Failed {
		t.Fatalf("%s failed after %d checks (seed %d): %s\n%s", target.Name, res.Checks, res.Seed, res.Message,
			properties.Report(res.Verdict, res.Outcome, properties.ReportOptions{Scenario: true}))
	}
	t.Logf("%s passed every consumption property over %d scenarios in %v", target.Name, res.Checks, res.Elapsed)
}

// sameTraces plays each of checks drawn scenarios of kind twice against
// target and fails if the two runs differ: a real database or a process
// serving many runs must not make a run depend on anything but its
// scenario. The comparison is a property, so rapid draws the scenarios and
// shrinks a difference like any other failure.
func sameTraces(t *testing.T, target system.Target, kind scenario.Kind, checks int) {
	t.Helper()
	same := properties.Property{Name: "same-trace", Kind: kind,
		Doc:  "the same scenario gives the same trace and result",
		Laws: []properties.Law{{Name: "same-trace", Doc: "two runs of one scenario give the same trace and result"}},
		Pass: func(*runner.Outcome, properties.Monitor) string { return "two runs gave the same trace" },
		Final: func(out *runner.Outcome, _ properties.Monitor) []properties.Breach {
			again, err := runner.Run(out.Scenario, target)
			if err != nil {
				return []properties.Breach{{Law: "same-trace", Summary: "the second run failed", Details: []string{err.Error()}}}
			}
			// The result as JSON: a burst is one reading of a few runs.
			ja, _ := json.Marshal([]any{out.Consumption, out.Projection})
			jb, _ := json.Marshal([]any{again.Consumption, again.Projection})
			if out.Trace.String() != again.Trace.String() || string(ja) != string(jb) {
				return []properties.Breach{{Law: "same-trace", Summary: "two runs of one scenario differ",
					Details: []string{"second run's trace:\n" + again.Trace.String()}}}
			}
			return nil
		}}
	res := properties.Hunt(target, properties.HuntOptions{Kind: kind,
		Properties: []properties.Property{same}, Checks: scaled(checks), Seed: seed})
	if res.Failed {
		t.Fatalf("%s is not deterministic: %s\n%s", target.Name, res.Message, properties.Report(res.Verdict, res.Outcome, properties.ReportOptions{Scenario: true}))
	}
}
