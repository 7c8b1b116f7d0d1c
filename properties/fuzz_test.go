package properties_test

import (
	"testing"

	"pgregory.net/rapid"

	"github.com/idemcheck/idemcheck/faults/gen"
	"github.com/idemcheck/idemcheck/faults/runner"
	"github.com/idemcheck/idemcheck/impl/system"
	"github.com/idemcheck/idemcheck/properties"
)

// Native Go fuzzing over the same properties: the fuzzer's bytes are what
// rapid draws a scenario from (rapid.MakeFuzz), so coverage guidance steers
// the scenarios. Without -fuzz, go test runs each target on its seed inputs
// below (and on testdata/fuzz/<FuzzName>/ if the fuzzer saved any). A campaign:
//
//	go test -fuzz=FuzzSingleCredit -fuzztime=10m ./properties
//
// A failing input is saved under testdata/fuzz/FuzzSingleCredit/ and replays
// with plain go test; its report carries the trace of the scenario.

// fuzzProperty runs one property against the reference on fuzzer-drawn
// scenarios of its kind. A property not registered (yet) skips, so that the
// targets can name properties another change adds.
func fuzzProperty(f *testing.F, name string) {
	p, ok := properties.ByName(name)
	if !ok {
		f.Skipf("property %q is not registered", name)
	}
	for _, seed := range fuzzSeeds {
		f.Add(seed)
	}
	target := system.Reference()
	f.Fuzz(rapid.MakeFuzz(func(t *rapid.T) {
		s := gen.ForKind(p.Kind).Draw(t, "scenario")
		out, err := runner.Run(s, target)
		if err != nil {
			t.Fatalf("the runner could not play the scenario: %v", err)
		}
		if v := p.Check(out); !v.Pass {
			// The report goes to the log; the message stays stable.
			t.Log(properties.Report(v, out, "go test -run="+f.Name()+" ./properties"))
			t.Fatalf("%s: %s", v.Property, v.Summary)
		}
	}))
}

// fuzzSeeds are starting inputs: empty (every draw at its smallest) and a
// few byte patterns that draw longer schedules, so the fuzzer starts from
// varied scenarios.
var fuzzSeeds = [][]byte{
	{},
	{0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08},
	{0xff, 0x00, 0xff, 0x00, 0xff, 0x00, 0xff, 0x00, 0x10, 0x20, 0x30, 0x40, 0x50, 0x60, 0x70, 0x80},
	[]byte("idemcheck: duplicates, crashes, leases, skew and replays"),
}

func FuzzSingleCredit(f *testing.F)       { fuzzProperty(f, "single-credit") }
func FuzzReplayUnchanged(f *testing.F)    { fuzzProperty(f, "replay-unchanged") }
func FuzzBoundedAttempts(f *testing.F)    { fuzzProperty(f, "bounded-attempts") }
func FuzzNothingLost(f *testing.F)        { fuzzProperty(f, "nothing-lost") }
func FuzzAtomicity(f *testing.F)          { fuzzProperty(f, "atomicity") }
func FuzzFencing(f *testing.F)            { fuzzProperty(f, "fencing") }
func FuzzProducerGate(f *testing.F)       { fuzzProperty(f, "producer-gate") }
func FuzzSkewSafeFinalState(f *testing.F) { fuzzProperty(f, "skew-safe-final-state") }
func FuzzHLCLaws(f *testing.F)            { fuzzProperty(f, "hlc-laws") }
func FuzzReplicaConvergence(f *testing.F) { fuzzProperty(f, "replica-convergence") }
