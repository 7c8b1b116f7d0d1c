package system

import (
	"github.com/idemcheck/idemcheck/impl/contract/clock"
	"github.com/idemcheck/idemcheck/impl/contract/hlc"
	"github.com/idemcheck/idemcheck/impl/contract/projector"
	"github.com/idemcheck/idemcheck/impl/contract/sequencer"
	"github.com/idemcheck/idemcheck/impl/mutant"
	"github.com/idemcheck/idemcheck/impl/reference/hybridclock"
	"github.com/idemcheck/idemcheck/impl/reference/orderprojector"
	"github.com/idemcheck/idemcheck/impl/reference/outbox"
	"github.com/idemcheck/idemcheck/internal/law"
)

// Projection builds the parts of a projection run: each node's hybrid
// logical clock, the outbox writer, and the projectors each replica runs.
type Projection struct {
	// NewHLC returns the HLC of the named node over its wall clock.
	NewHLC func(node string, wall clock.Source) hlc.Clock
	// OpenHLC, if set, is used instead of NewHLC: a constructor that can
	// fail, whose error fails the run (a library's bad option).
	OpenHLC func(node string, wall clock.Source) (hlc.Clock, error)
	// NewSequencer returns the outbox writer that assigns seq.
	NewSequencer func() sequencer.Sequencer
	// Projectors are the projectors the target claims are correct: the
	// skew-safe final state and replica convergence are judged on them.
	Projectors []NamedProjector
	// Baselines run beside them on the same deliveries and are reported, but
	// are not held to the invariants: the known-bad timestamp projector is
	// kept here to show, in every run, what it gets wrong.
	Baselines []NamedProjector
}

// NamedProjector is one projector implementation under its name in traces
// and verdicts.
type NamedProjector struct {
	Name string
	New  func() projector.Projector
}

func referenceProjection() *Projection {
	return &Projection{
		NewHLC:       func(node string, wall clock.Source) hlc.Clock { return hybridclock.New(node, wall) },
		NewSequencer: func() sequencer.Sequencer { return outbox.New() },
		Projectors: []NamedProjector{
			{Name: "seq", New: orderprojector.NewSeq},
			{Name: "hlc", New: orderprojector.NewHLC},
		},
		Baselines: []NamedProjector{
			{Name: "timestamp-lww", New: orderprojector.NewTimestampLWW},
		},
	}
}

// projectionMutant registers the reference with one part swapped.
func projectionMutant(name, bug, killedBy string, swap func(*Projection)) {
	p := referenceProjection()
	swap(p)
	register(Target{Name: name, Mutant: true, Bug: bug, KilledBy: killedBy, Projection: p})
}

func init() {
	projectionMutant("hlc-no-merge",
		"the HLC ignores received stamps (merge just ticks), so a node whose clock is behind stamps its reply before the event it answers",
		law.HLCLaws, func(p *Projection) {
			p.NewHLC = mutant.NewHLCNoMerge
		})
	projectionMutant("hlc-backwards-on-step",
		"the HLC restarts from the physical reading when the wall clock steps backwards, instead of keeping the max",
		law.HLCLaws, func(p *Projection) {
			p.NewHLC = mutant.NewHLCBackwardsOnStep
		})
	projectionMutant("timestamp-lww-projector",
		"the projector orders events by the producer's occurredAtMs (last write wins), which clock skew reverses",
		law.SkewSafeFinalState, func(p *Projection) {
			p.Projectors = []NamedProjector{{Name: "timestamp-lww", New: orderprojector.NewTimestampLWW}}
			p.Baselines = nil
		})
	projectionMutant("dedup-only-projector",
		"the projector dedupes by event id and applies the rest in arrival order: idempotent, not reorder-safe",
		law.ReplicaConvergence, func(p *Projection) {
			p.Projectors = []NamedProjector{{Name: "dedup-only", New: mutant.NewDedupOnlyProjector}}
		})
}
