package gen

import (
	"testing"

	"pgregory.net/rapid"

	"github.com/idemcheck/idemcheck/faults/scenario"
	"github.com/idemcheck/idemcheck/internal/hunt"
)

// BenchmarkDraw is what drawing a scenario costs a campaign's check.
//
//	go test -run='^$' -bench=Draw ./faults/gen
func BenchmarkDraw(b *testing.B) {
	for _, k := range []scenario.Kind{scenario.KindConsumption, scenario.KindProjection} {
		b.Run(string(k), func(b *testing.B) {
			g := ForKind(k)
			for b.Loop() {
				hunt.Check(b, func(t *rapid.T) { g.Draw(t, "scenario") })
			}
		})
	}
}
