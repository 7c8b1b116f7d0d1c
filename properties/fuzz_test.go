package properties_test

import (
	"math/rand/v2"
	"testing"

	"pgregory.net/rapid"

	"github.com/idemcheck/idemcheck/faults/gen"
	"github.com/idemcheck/idemcheck/impl/system"
	"github.com/idemcheck/idemcheck/internal/hunt"
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
	f.Fuzz(hunt.MakeFuzz(func(t *rapid.T) {
		s := gen.ForKind(p.Kind).Draw(t, "scenario")
		out, verdicts, err := properties.Judge(s, target, []properties.Property{p})
		if err != nil {
			t.Fatalf("the runner could not play the scenario: %v", err)
		}
		if v := verdicts[0]; !v.Pass {
			// The report goes to the log; the message stays stable.
			t.Log(properties.Report(v, out, properties.ReportOptions{Scenario: true, Replay: "go test -run=" + f.Name() + " ./properties"}))
			t.Fatalf("%s: %s", properties.ID(v.Property, v.Law), v.Summary)
		}
	}))
}

// fuzzSeeds are the starting inputs. rapid reads the fuzzer's bytes eight
// at a time, one draw each, and skips an input that runs out before the
// scenario is drawn; a scenario takes tens to hundreds of draws, so the
// seeds are long: all zeros (every draw at its smallest) and pseudo-random
// bytes from fixed seeds, which draw varied, busy scenarios for the fuzzer
// to mutate.
var fuzzSeeds = func() [][]byte {
	out := [][]byte{make([]byte, 4096)}
	for seed := range uint64(6) {
		r := rand.New(rand.NewPCG(seed, 0x1de3c4ec))
		b := make([]byte, 4096)
		for i := range b {
			b[i] = byte(r.Uint32())
		}
		out = append(out, b)
	}
	return out
}()

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
