package properties

import (
	"testing"

	"pgregory.net/rapid"

	"github.com/idemcheck/idemcheck/faults/scenario"
	"github.com/idemcheck/idemcheck/impl/system"
)

// Conformance checks target against every property that applies to it, with
// rapid drawing and shrinking scenarios. It is the one call another Go
// implementation makes from its own test:
//
//	func TestMyStore(t *testing.T) {
//		properties.Conformance(t, system.WithStore("mystore", openMyStore))
//	}
//
// A failure prints the shrunk scenario's numbered trace, a diff of the model
// against the implementation, and rapid's seed and command to replay it.
// Use -rapid.checks to run longer.
func Conformance(t *testing.T, target system.Target) {
	t.Helper()
	if target.Consumption != nil {
		t.Run("consumption", func(t *testing.T) { CheckKind(t, target, scenario.KindConsumption) })
	}
	if target.Projection != nil {
		t.Run("projection", func(t *testing.T) { CheckKind(t, target, scenario.KindProjection) })
	}
}

// CheckKind runs rapid over scenarios of kind k against target, judging
// every property of that kind.
func CheckKind(t *testing.T, target system.Target, k scenario.Kind) {
	t.Helper()
	props := ForKind(k)
	rapid.Check(t, func(rt *rapid.T) {
		f := judgeDrawn(rt, target, HuntOptions{Kind: k, Properties: props})
		if f == nil {
			return
		}
		// The message stays free of times and pointers so rapid can tell
		// the shrunk failure is the one it started from; the report goes
		// to the log.
		rt.Log(Report(f.verdict, f.outcome, "rerun this test with the -rapid.seed printed above"))
		rt.Fatalf("%s: %s", f.verdict.Property, f.verdict.Summary)
	})
}
