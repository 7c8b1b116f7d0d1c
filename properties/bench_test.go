package properties_test

import (
	"testing"

	"github.com/idemcheck/idemcheck/faults/scenario"
	"github.com/idemcheck/idemcheck/impl/system"
	"github.com/idemcheck/idemcheck/properties"
)

// BenchmarkHunt measures checks per second: rapid draws a scenario, the
// runner plays it against the reference, and every property of its kind
// judges it — the inner loop of a campaign.
//
//	go test -run='^$' -bench=Hunt -benchtime=5x ./properties
func BenchmarkHunt(b *testing.B) {
	for _, k := range []scenario.Kind{scenario.KindConsumption, scenario.KindProjection} {
		b.Run(string(k), func(b *testing.B) {
			checks := 0
			for i := 0; b.Loop(); i++ {
				res := properties.Hunt(system.Reference(), properties.HuntOptions{Kind: k, Properties: properties.ForKind(k), Checks: 2000, Seed: uint64(i + 1)})
				if res.Failed {
					b.Fatalf("the reference failed: %s", res.Message)
				}
				checks += res.Checks
			}
			b.ReportMetric(float64(checks)/b.Elapsed().Seconds(), "checks/s")
		})
	}
}
