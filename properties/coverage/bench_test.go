package coverage_test

import (
	"testing"

	"github.com/idemcheck/idemcheck/faults/gen"
	"github.com/idemcheck/idemcheck/faults/runner"
	"github.com/idemcheck/idemcheck/faults/scenario"
	"github.com/idemcheck/idemcheck/impl/system"
	"github.com/idemcheck/idemcheck/properties/coverage"
)

// BenchmarkRun measures what the coverage observer adds to a consumption
// run: the same 500 drawn scenarios played against the reference, without
// and with it (go test -bench Run -run '^$' ./properties/coverage).
func BenchmarkRun(b *testing.B) {
	scs := make([]*scenario.Scenario, 500)
	for i := range scs {
		scs[i] = gen.Consumption().Example(i)
	}
	play := func(b *testing.B, obs *coverage.Observer) {
		i := 0
		for b.Loop() {
			s := scs[i%len(scs)]
			i++
			var out *runner.Outcome
			var err error
			if obs == nil {
				out, err = runner.Run(s, system.Reference())
			} else {
				out, err = runner.Run(s, system.Reference(), obs)
				obs.End(out)
			}
			if err != nil || out == nil {
				b.Fatal(err)
			}
		}
	}
	b.Run("without", func(b *testing.B) { play(b, nil) })
	b.Run("with-coverage", func(b *testing.B) { play(b, coverage.NewObserver()) })
}
