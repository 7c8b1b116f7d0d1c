package synctime_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/impl/adapter/synctime"
)

// BenchmarkTest is the cost of one run in a bubble of its own (Test) whose
// library starts a goroutine and stops it when the run ends, as a store
// with a sweeper and a Close does: nothing leaks. parked is how many other
// goroutines the process holds — a long hunt's earlier runs leave one each
// when the library's are tolerated (Library.Lingering) — so a leak check
// whose cost grows with every goroutine of the process shows as a cost per
// run that grows with parked, and a hunt of n runs as n² work.
//
//	go test -run '^$' -bench BenchmarkTest -benchtime 2000x ./impl/adapter/synctime
func BenchmarkTest(b *testing.B) {
	for _, parked := range []int{0, 1_000, 10_000} {
		b.Run(fmt.Sprintf("parked=%d", parked), func(b *testing.B) {
			release := make(chan struct{})
			for range parked {
				go func() { <-release }()
			}
			defer close(release)
			withT(b, func(t *testing.T) {
				b.ResetTimer()
				for range b.N {
					leak, err := synctime.Test(t, sweeperRun)
					if err != nil || leak != nil {
						t.Fatalf("leak %v, error %v", leak, err)
					}
				}
				b.StopTimer()
			})
		})
	}
}

// BenchmarkTestTolerant is BenchmarkTest for a library whose goroutine is
// tolerated (Library.Lingering): every run leaves one parked for the rest
// of the process, so the runs themselves pile them up, as a long hunt of
// such a library does.
//
//	go test -run '^$' -bench BenchmarkTestTolerant -benchtime 2000x ./impl/adapter/synctime
func BenchmarkTestTolerant(b *testing.B) {
	withT(b, func(t *testing.T) {
		b.ResetTimer()
		for range b.N {
			left, err := synctime.TestTolerant(t, func(*testing.T) {
				go func() { <-make(chan struct{}) }()
			})
			if err != nil || !left {
				t.Fatalf("left %v, error %v", left, err)
			}
		}
		b.StopTimer()
	})
}

// sweeperRun is a run of a library whose background goroutine its Close
// stops: it ticks twice, then the run ends and stops it.
func sweeperRun(t *testing.T) {
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			select {
			case <-tick.C:
			case <-stop:
				return
			}
		}
	}()
	time.Sleep(2 * time.Second)
	close(stop)
	<-done
}

// withT runs f with a *testing.T, which Test needs (testing/synctest
// takes nothing else) and a benchmark does not have: testing.RunTests
// runs f as a test of its own inside the benchmark.
func withT(b *testing.B, f func(t *testing.T)) {
	b.Helper()
	all := func(string, string) (bool, error) { return true, nil }
	if !testing.RunTests(all, []testing.InternalTest{{Name: b.Name(), F: f}}) {
		b.Fatal("the runs failed")
	}
}
