package main

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// The budgets of a search (fuzzrun explore, fuzzrun explore -projection,
// fuzzrun consumer -explore): a time budget (-duration) and a memory
// budget (-max-memory). A search stopped by either says which, and how far
// it got; a search that ends by itself is bounded by its depth or its
// bounds.

// defaultExploreMemory is the memory budget where the machine's memory is
// not known.
const defaultExploreMemory = 4 << 30

// defaultConsumerExploreDuration is the time budget of fuzzrun consumer
// -explore without -duration: a safety net, well past what an example's
// bounds take (a minute or two on a loaded machine).
const defaultConsumerExploreDuration = 10 * time.Minute

// errTimeBudget and errMemoryBudget are the causes of a search context
// ended by a budget; any other cause is a signal (Ctrl-C, SIGTERM).
var (
	errTimeBudget   = errors.New("the time budget ran out")
	errMemoryBudget = errors.New("the memory budget ran out")
)

// Why a search stopped short.
const (
	stoppedBySignal = "signal"
	stoppedByTime   = "time"
	stoppedByMemory = "memory"
)

// memoryWatchEvery is how often the memory budget is looked at.
const memoryWatchEvery = 100 * time.Millisecond

// searchBudget is a running search's budgets.
type searchBudget struct {
	time   time.Duration // 0: none
	memory int64         // bytes; 0: none
	// peak is the most memory seen in use, for the report.
	peak atomic.Int64
}

// searchContext returns ctx, also ended when the time budget d (0: none)
// runs out or the process's memory in use reaches the budget mem (0:
// none), and the function that releases it. While it runs, the
// collector works harder as the memory nears the budget. b.stopped says
// why the context ended.
func searchContext(ctx context.Context, d time.Duration, mem int64) (context.Context, *searchBudget, func()) {
	b := &searchBudget{time: d, memory: mem}
	ctx, cancel := context.WithCancelCause(ctx)
	var timer *time.Timer
	if d > 0 {
		timer = time.AfterFunc(d, func() { cancel(errTimeBudget) })
	}
	done := make(chan struct{})
	var restore func()
	if used := residentBytes(); mem > 0 && used >= mem {
		b.peak.Store(used)
		cancel(errMemoryBudget) // spent before the search starts
		mem = 0
	}
	if mem > 0 {
		old := debug.SetMemoryLimit(mem / 10 * 9)
		restore = func() { debug.SetMemoryLimit(old) }
		go func() {
			tick := time.NewTicker(memoryWatchEvery)
			defer tick.Stop()
			for {
				select {
				case <-done:
					return
				case <-ctx.Done():
					return
				case <-tick.C:
				}
				used := residentBytes()
				if used > b.peak.Load() {
					b.peak.Store(used)
				}
				if used >= mem {
					cancel(errMemoryBudget)
					return
				}
			}
		}()
	}
	return ctx, b, func() {
		if timer != nil {
			timer.Stop()
		}
		close(done)
		if restore != nil {
			restore()
		}
		cancel(nil)
	}
}

// stopped says why ctx, a search context, ended: "" when it has not,
// stoppedByTime, stoppedByMemory or stoppedBySignal. Call it before the
// context is released.
func (b *searchBudget) stopped(ctx context.Context) string {
	if ctx.Err() == nil {
		return ""
	}
	switch cause := context.Cause(ctx); {
	case errors.Is(cause, errTimeBudget):
		return stoppedByTime
	case errors.Is(cause, errMemoryBudget):
		return stoppedByMemory
	}
	return stoppedBySignal
}

// by says in words what stopped a search (why, one of stopped's), to
// follow "stopped" or "interrupted": "by the time budget (-duration 30s)".
func (b *searchBudget) by(why string) string {
	switch why {
	case stoppedByTime:
		return fmt.Sprintf("by the time budget (-duration %s)", b.time)
	case stoppedByMemory:
		return fmt.Sprintf("by the memory budget (-max-memory %s; %s in use)", formatBytes(b.memory), formatBytes(b.peak.Load()))
	case stoppedBySignal:
		return "by a signal (Ctrl-C or SIGTERM)"
	}
	return ""
}

// String describes the budgets, for the report's budget line.
func (b *searchBudget) String() string {
	var parts []string
	if b.time > 0 {
		parts = append(parts, b.time.String())
	} else {
		parts = append(parts, "no time limit")
	}
	if b.memory > 0 {
		parts = append(parts, formatBytes(b.memory)+" of memory")
	}
	return strings.Join(parts, ", ")
}

// defaultMaxMemory is the memory budget of a search without -max-memory:
// three quarters of the machine's memory.
func defaultMaxMemory() int64 {
	if m := memoryLimit(); m > 0 {
		return m
	}
	return defaultExploreMemory
}

// parseSize reads a memory size: a number of bytes, or a number with a
// unit, KB, MB, GB, TB (powers of 1000) or KiB, MiB, GiB, TiB (of 1024):
// 512MB, 1.5GiB, 8GB.
func parseSize(s string) (int64, error) {
	t := strings.TrimSpace(s)
	units := []struct {
		suffix string
		mult   float64
	}{
		{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40},
		{"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12}, {"K", 1 << 10}, {"M", 1 << 20}, {"G", 1 << 30}, {"T", 1 << 40}, {"B", 1},
	}
	mult := 1.0
	for _, u := range units {
		if n, ok := strings.CutSuffix(t, u.suffix); ok {
			t, mult = strings.TrimSpace(n), u.mult
			break
		}
	}
	v, err := strconv.ParseFloat(t, 64)
	if err != nil || v <= 0 || math.IsInf(v, 0) || math.IsNaN(v) || v*mult >= math.MaxInt64 {
		return 0, fmt.Errorf("%q is not a memory size (e.g. 512MB, 4GB, 1.5GiB)", s)
	}
	n := int64(v * mult)
	if n < 1<<20 {
		return 0, fmt.Errorf("%q is less than 1 MiB: a search needs more", s)
	}
	return n, nil
}

// formatBytes renders a size for a person: 1.5 GB, 512 MB.
func formatBytes(n int64) string {
	switch {
	case n >= 1e9:
		return fmt.Sprintf("%.1f GB", float64(n)/1e9)
	case n >= 1e6:
		return fmt.Sprintf("%.0f MB", float64(n)/1e6)
	case n >= 1e3:
		return fmt.Sprintf("%.0f kB", float64(n)/1e3)
	}
	return fmt.Sprintf("%d B", n)
}

// runtimeBytes is the memory the Go runtime holds from the system and has
// not given back.
func runtimeBytes() int64 {
	s := []metrics.Sample{{Name: "/memory/classes/total:bytes"}, {Name: "/memory/classes/heap/released:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 || s[1].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return int64(s[0].Value.Uint64() - s[1].Value.Uint64())
}
