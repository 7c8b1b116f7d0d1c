package explore

import (
	"context"
	"testing"

	"github.com/idemcheck/idemcheck/faults/runner"
	"github.com/idemcheck/idemcheck/faults/scenario"
	"github.com/idemcheck/idemcheck/impl/system"
)

// BenchmarkExplore explores the reference, 1 event x 2 workers, the full
// menu, to depth 8, on one core: distinct states/s per core.
func BenchmarkExplore(b *testing.B) {
	var states int64
	for b.Loop() {
		r, err := Explore(context.Background(), system.Reference(), Options{World: tiny, Depth: 8, Parallel: 1})
		if err != nil || r.Counterexample != nil {
			b.Fatal(err, r.Counterexample)
		}
		states += r.States
	}
	b.ReportMetric(float64(states)/b.Elapsed().Seconds(), "states/s")
}

// BenchmarkFingerprint is the cost of one fingerprint of a world mid-run
// (one event delivered twice, one worker mid-pipeline), with symmetry.
func BenchmarkFingerprint(b *testing.B) {
	base, err := World{Events: []string{"ok", "ok"}, Groups: 1, WorkersPerGroup: 2}.Scenario()
	if err != nil {
		b.Fatal(err)
	}
	w, err := runner.NewWorld(base, system.Reference().Consumption)
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close()
	for i, st := range []scenario.Step{{Op: "produce"}, {Op: "produce", Event: 1}, {Op: "duplicate", N: 1}, {Op: "deliver", Worker: "w1"},
		{Op: "step", Worker: "w1"}, {Op: "deliver", Worker: "w2"}} {
		if err := w.Apply(i, st); err != nil {
			b.Fatal(err)
		}
	}
	fp := runner.NewFingerprinter(base, runner.FingerprintOptions{SymmetricWorkers: true, SymmetricEvents: true})
	b.ReportAllocs()
	for b.Loop() {
		fp.Sum(w)
	}
}
