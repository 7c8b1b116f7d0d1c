package guardhlc_test

import (
	"strings"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/examples/libraries/guardhlc"
	"github.com/idemcheck/idemcheck/faults/scenario"
	"github.com/idemcheck/idemcheck/impl/contract/clock"
	"github.com/idemcheck/idemcheck/impl/contract/hlc"
	"github.com/idemcheck/idemcheck/impl/contract/hlc/hlcformat"
	"github.com/idemcheck/idemcheck/impl/system"
	"github.com/idemcheck/idemcheck/properties"
)

const maxOffset = 500 * time.Millisecond

func target(name string, open func(func() int64, time.Duration) (*guardhlc.Clock, error)) system.Target {
	return system.WithHLC(name, func(node string, wall clock.Source) (hlc.Clock, error) {
		c, err := open(hlcformat.WallNs(wall), maxOffset)
		if err != nil {
			return nil, err
		}
		return hlcformat.NewNanos(node, hlcformat.Nanos{Tick: c.Now, Merge: c.Update, MaxOffset: maxOffset})
	})
}

// The fixed clock refuses stamps under skew of minutes, as designed, and
// is never flagged: not by the HLC laws, and not by the projectors that
// order by its stamps.
// budget keeps the suite quick: 100 scenarios per law instead of the
// default time budget (properties.DefaultBudget).
var budget = properties.Options{Checks: 100}

func TestGuardHLC(t *testing.T) {
	tg := target("guardhlc", guardhlc.New)
	properties.CheckProperty(t, tg, "hlc-laws", budget)
	properties.CheckProperty(t, tg, "skew-safe-final-state", budget)
}

// Version 1 refuses a message merely delayed: caught, and the law names it.
func TestGuardHLCv1IsCaught(t *testing.T) {
	p, _ := properties.ByName("hlc-laws")
	res := properties.Hunt(target("guardhlc-v1", guardhlc.NewV1), properties.HuntOptions{
		Kind: scenario.KindProjection, Properties: []properties.Property{p}, Checks: 1000, Seed: 1,
	})
	if !res.Failed || res.Law != "hlc-laws/refuse-only-beyond-max-offset" {
		t.Fatalf("version 1 not caught by refuse-only-beyond-max-offset: failed=%v law=%q", res.Failed, res.Law)
	}
	report := properties.Report(res.Verdict, res.Outcome, properties.ReportOptions{})
	t.Logf("caught after %d checks:\n%s", res.Checks, report)
	// The refusal names what put the stamp behind the clock: a sender's
	// skew is not a delay in a queue.
	if !strings.Contains(report, "'s clock ran") && !strings.Contains(report, "in transit") {
		t.Errorf("the refusal does not name its cause:\n%s", report)
	}
}
