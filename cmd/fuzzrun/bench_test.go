package main

import (
	"context"
	"io"
	"syscall"
	"testing"
	"time"
)

// cpuTime is the CPU time this process has used, user and system.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkCampaignWorker is one worker of the default campaign, the
// messages it sends to its parent included: every property against the
// reference, kinds taking turns in batches of the default size (and each
// kind alone). Profile the campaign path with
//
//	go test -run='^$' -bench=CampaignWorker/all -benchtime=20000x -cpuprofile=cpu.out ./cmd/fuzzrun
func BenchmarkCampaignWorker(b *testing.B) {
	for _, c := range []struct{ name, props string }{
		{"all", "*"},
		{"consumption", "single-credit,replay-unchanged,bounded-attempts,nothing-lost,atomicity,fencing,producer-gate"},
		{"projection", "skew-safe-final-state,hlc-laws,replica-convergence"},
	} {
		b.Run(c.name, func(b *testing.B) {
			o, err := lookupCommand("worker").parse([]string{"-seed", "1", "-checks", "1", "-duration", "0", "-property", c.props})
			if err != nil {
				b.Fatal(err)
			}
			o.checks = int64(b.N)
			cpu := cpuTime()
			b.ResetTimer()
			runWorker(context.Background(), o, io.Discard)
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "checks/s")
			// CPU time is what a shared machine's load does not inflate.
			b.ReportMetric(float64(b.N)/(cpuTime()-cpu).Seconds(), "checks/cpu-s")
		})
	}
}
