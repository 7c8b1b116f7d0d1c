package packedhlc_test

import (
	"testing"

	"github.com/idemcheck/idemcheck/examples/libraries/packedhlc"
	"github.com/idemcheck/idemcheck/faults/scenario"
	"github.com/idemcheck/idemcheck/impl/contract/clock"
	"github.com/idemcheck/idemcheck/impl/contract/hlc"
	"github.com/idemcheck/idemcheck/impl/contract/hlc/hlcformat"
	"github.com/idemcheck/idemcheck/impl/system"
	"github.com/idemcheck/idemcheck/properties"
)

func target(name string, open func(func() int64) *packedhlc.Clock) system.Target {
	return system.WithHLC(name, func(node string, wall clock.Source) (hlc.Clock, error) {
		c := open(hlcformat.WallNs(wall))
		return hlcformat.NewPacked(node, hlcformat.Packed{Tick: c.Now, Merge: c.Update})
	})
}

// The packed clock drops the wall's low bits by design: through the packed
// adapter it is judged with that granularity and never flagged.
func TestPackedHLC(t *testing.T) {
	properties.CheckProperty(t, target("packedhlc", packedhlc.New), "hlc-laws", properties.Options{Checks: 100})
}

// Version 1's counter wraps: a burst of events within one millisecond makes
// it go backwards, and monotonic says so.
func TestPackedHLCv1IsCaught(t *testing.T) {
	p, _ := properties.ByName("hlc-laws")
	res := properties.Hunt(target("packedhlc-v1", packedhlc.NewV1), properties.HuntOptions{
		Kind: scenario.KindProjection, Properties: []properties.Property{p}, Checks: 1000, Seed: 1,
	})
	if !res.Failed || res.Law != "hlc-laws/monotonic" {
		t.Fatalf("version 1 not caught by monotonic: failed=%v law=%q", res.Failed, res.Law)
	}
	t.Logf("caught after %d checks, counterexample of size %d", res.Checks, res.Scenario.Size())
}
