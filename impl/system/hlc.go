package system

import (
	"github.com/idemcheck/idemcheck/impl/contract/clock"
	"github.com/idemcheck/idemcheck/impl/contract/hlc"
	"github.com/idemcheck/idemcheck/impl/contract/hlc/hlcformat"
	"github.com/idemcheck/idemcheck/impl/contract/projector"
	"github.com/idemcheck/idemcheck/impl/mutant"
	"github.com/idemcheck/idemcheck/internal/law"
)

// WithHLC returns the reference projection parts over another HLC: how a
// team's clock, or a library's through package hlcformat, is checked. The
// reference projectors then order by its stamps, so a clock that breaks
// causality also shows in skew-safe-final-state. A constructor that fails
// (a bad option, say) fails the run with its error.
func WithHLC(name string, openHLC func(node string, wall clock.Source) (hlc.Clock, error)) Target {
	p := referenceProjection()
	p.NewHLC, p.OpenHLC = nil, openHLC
	return Target{Name: name, Projection: p}
}

func init() {
	projectionMutant("hlc-refuses-delayed",
		"the HLC's max-offset guard measures the distance either way, so with no skew at all it refuses (and the node drops) a message merely delayed in a queue by more than the max offset",
		law.HLCLaws, func(p *Projection) {
			p.NewHLC = mutant.NewHLCRefusesDelayed
		})
	projectionMutant("hlc-max-offset-wrong-unit",
		"the HLC declares a max offset of 500 ms but converts it to whole seconds (0), so it refuses every stamp even a millisecond ahead",
		law.HLCLaws, func(p *Projection) {
			p.NewHLC = mutant.NewHLCMaxOffsetWrongUnit
		})
	projectionMutant("hlc-packed-counter-wraps",
		"a packed 48+16-bit HLC whose 16-bit counter wraps to zero instead of carrying into the wall: the 65,537th event within one wall value goes backwards",
		law.HLCLaws, func(p *Projection) {
			p.NewHLC = func(node string, wall clock.Source) hlc.Clock {
				m := mutant.NewPackedCounterWraps(hlcformat.WallNs(wall))
				c, err := hlcformat.NewPacked(node, hlcformat.Packed{Tick: m.Now, Merge: m.Update})
				if err != nil {
					panic(err) // the options are constants: this cannot fail
				}
				return c
			}
		})
}

// WithProjector returns the reference projection parts (HLCs, outbox) with
// another projector as the one the target claims correct: how a team's
// projector is checked. The known-bad timestamp projector still runs beside
// it as a baseline, reported and not judged. A projector that can fail
// outside its contract (one in another process) implements
// projector.Failer, and its failure fails the run.
func WithProjector(name string, newProjector func() projector.Projector) Target {
	p := referenceProjection()
	p.Projectors = []NamedProjector{{Name: name, New: newProjector}}
	return Target{Name: name, Projection: p}
}
