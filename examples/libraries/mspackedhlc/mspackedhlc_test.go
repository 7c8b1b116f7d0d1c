package mspackedhlc_test

import (
	"strings"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/examples/libraries/mspackedhlc"
	"github.com/idemcheck/idemcheck/faults/scenario"
	"github.com/idemcheck/idemcheck/impl/contract/clock"
	"github.com/idemcheck/idemcheck/impl/contract/hlc"
	"github.com/idemcheck/idemcheck/impl/contract/hlc/hlcformat"
	"github.com/idemcheck/idemcheck/impl/system"
	"github.com/idemcheck/idemcheck/properties"
)

// target adapts the library as its users would: its wall is milliseconds,
// 48 bits wide, and its wire carries the sender's node.
func target(name string, open func(string, func() int64) *mspackedhlc.Clock, layout hlcformat.Packed) system.Target {
	return system.WithHLC(name, func(node string, wall clock.Source) (hlc.Clock, error) {
		c := open(node, hlcformat.WallMs(wall))
		layout.Tick = func() uint64 { return c.Now().Bits }
		layout.MergeFrom = func(remote uint64, from string) (uint64, error) {
			return c.Update(mspackedhlc.Stamp{Bits: remote, Node: from}).Bits, nil
		}
		return hlcformat.NewPacked(node, layout)
	})
}

var milliseconds = hlcformat.Packed{WallUnit: time.Millisecond, WallBits: 48}

// Read in its own unit, the clock is never flagged.
func TestMillisecondPackedHLC(t *testing.T) {
	tg := target("mspackedhlc", mspackedhlc.New, milliseconds)
	properties.CheckProperty(t, tg, "hlc-laws", properties.Options{Checks: 100})
	properties.CheckProperty(t, tg, "skew-safe-final-state", properties.Options{Checks: 100})
}

// Read as the nanosecond layout, the same stamps are a wall in 1970 and
// physical-bound fires at once: the unit is part of the format.
func TestReadInTheWrongUnitIsAFalseAlarm(t *testing.T) {
	p, _ := properties.ByName("hlc-laws")
	res := properties.Hunt(target("mspackedhlc-as-ns", mspackedhlc.New, hlcformat.Packed{}), properties.HuntOptions{
		Kind: scenario.KindProjection, Properties: []properties.Property{p}, Checks: 10, Seed: 1, NoReduce: true,
	})
	if !res.Failed || res.Law != "hlc-laws/physical-bound" {
		t.Fatalf("read as nanoseconds: failed=%v law=%q, want physical-bound", res.Failed, res.Law)
	}
	if !strings.Contains(strings.Join(res.Verdict.Details, "\n"), "behind its physical clock") {
		t.Fatalf("physical-bound details do not name the lag: %v", res.Verdict.Details)
	}
}

// Version 1's sign extension: a burst of more than 32,768 events within a
// millisecond sends the clock backwards, and monotonic says so.
func TestVersion1IsCaught(t *testing.T) {
	p, _ := properties.ByName("hlc-laws")
	res := properties.Hunt(target("mspackedhlc-v1", mspackedhlc.NewV1, milliseconds), properties.HuntOptions{
		Kind: scenario.KindProjection, Properties: []properties.Property{p}, Checks: 1000, Seed: 1, NoReduce: true,
	})
	if !res.Failed || res.Law != "hlc-laws/monotonic" {
		t.Fatalf("version 1 not caught by monotonic: failed=%v law=%q", res.Failed, res.Law)
	}
	t.Logf("caught after %d checks, counterexample of size %d", res.Checks, res.Scenario.Size())
}
