package explore

import (
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/faults/runner"
	"github.com/idemcheck/idemcheck/faults/scenario"
	"github.com/idemcheck/idemcheck/impl/system"
)

// BenchmarkExplore explores the reference, 1 event x 2 workers, the full
// menu, on one core, on the compact engine (the default for the
// reference) to depth 10 and on the runner engine to depth 8: distinct
// states/s per core, by the wall clock and by the process's CPU time
// (which other jobs on a loaded machine do not inflate).
func BenchmarkExplore(b *testing.B) {
	for _, c := range []struct {
		engine string
		depth  int
	}{{EngineCompact, 10}, {EngineRunner, 8}} {
		b.Run(c.engine, func(b *testing.B) {
			var states int64
			cpu0 := cpuTime()
			for b.Loop() {
				r, err := Explore(context.Background(), system.Reference(), Options{World: tiny, Depth: c.depth, Parallel: 1, Engine: c.engine})
				if err != nil || r.Counterexample != nil {
					b.Fatal(err, r.Counterexample)
				}
				states += r.States
			}
			b.ReportMetric(float64(states)/b.Elapsed().Seconds(), "states/s")
			b.ReportMetric(float64(states)/(cpuTime()-cpu0).Seconds(), "states/cpu-s")
		})
	}
}

// cpuTime is the CPU time the process has used, user and system.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
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
		{Op: "run", Worker: "w1"}, {Op: "deliver", Worker: "w2"}} {
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

// BenchmarkVerifyOneEventTwoWorkers verifies the reference, 1 event x 2
// workers x the full menu, to depth 12, on every core (-cpu sets them).
func BenchmarkVerifyOneEventTwoWorkers(b *testing.B) {
	for b.Loop() {
		r, err := Explore(context.Background(), system.Reference(), Options{World: tiny, Depth: 12})
		if err != nil || r.Counterexample != nil || r.Depth != 12 {
			b.Fatal(err, r.Counterexample)
		}
		b.ReportMetric(float64(r.States), "states")
		b.ReportMetric(r.StatesPerSecond(), "states/s")
		b.ReportMetric(r.BytesPerState, "bytes/state")
	}
}

// BenchmarkMutantsFound explores every consumption mutant (1 event x 2
// workers, the full menu, the worlds of mutantWorlds, one depth more at a
// time) until the first counterexample: the slowest mutant's seconds and
// the deepest counterexample are reported.
func BenchmarkMutantsFound(b *testing.B) {
	for b.Loop() {
		var slowest time.Duration
		deepest := 0
		for _, m := range system.Mutants() {
			if m.Consumption == nil || concurrencyOnly[m.Name] {
				continue
			}
			start := time.Now()
			cx := findMutant(b, m, 12)
			if cx == nil {
				b.Fatalf("%s survived depth 12", m.Name)
			}
			deepest = max(deepest, cx.Depth)
			slowest = max(slowest, time.Since(start))
		}
		b.ReportMetric(slowest.Seconds(), "slowest-s")
		b.ReportMetric(float64(deepest), "deepest")
	}
}

// BenchmarkVerifyTwoEventsTwoWorkers explores the reference, 2 events x 2
// workers x the full menu, to depth 11, on every core (-cpu sets them).
func BenchmarkVerifyTwoEventsTwoWorkers(b *testing.B) {
	for b.Loop() {
		r, err := Explore(context.Background(), system.Reference(), Options{World: World{Events: []string{"ok", "ok"}, Groups: 1, WorkersPerGroup: 2}, Depth: 11})
		if err != nil || r.Counterexample != nil || r.Depth != 11 {
			b.Fatal(err, r.Counterexample)
		}
		b.ReportMetric(float64(r.States), "states")
		b.ReportMetric(r.StatesPerSecond(), "states/s")
		b.ReportMetric(float64(r.FrontierBytes)/float64(max(r.FrontierStates, 1)), "packed-bytes/state")
	}
}
