package synctime

import (
	"context"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/idemcheck/idemcheck/impl/contract/clock"
	"github.com/idemcheck/idemcheck/impl/contract/store"
)

func TestSyncFollowsTheHarnessForwardOnly(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		v := clock.NewVirtual(1_700_000_000_000)
		f := Follow(v)
		if err := f.Sync(); err != nil {
			t.Fatal(err)
		}
		if got := time.Now().UnixMilli(); got != v.NowMs() {
			t.Fatalf("bubble reads %d, harness %d", got, v.NowMs())
		}
		v.Advance(1234)
		if err := f.Sync(); err != nil || time.Now().UnixMilli() != v.NowMs() {
			t.Fatalf("after an advance: %v, bubble %d, harness %d", err, time.Now().UnixMilli(), v.NowMs())
		}
		behind := Follow(clock.NewVirtual(1_600_000_000_000))
		if err := behind.Sync(); err == nil || !strings.Contains(err.Error(), "only moves forward") {
			t.Fatalf("a harness clock behind the bubble: error %v", err)
		}
	})
}

func TestSyncOutsideABubbleFails(t *testing.T) {
	if err := Follow(clock.NewVirtual(1_700_000_000_000)).Sync(); err == nil {
		t.Fatal("Sync outside a bubble did not fail")
	}
}

func TestClockOfReadsTheSource(t *testing.T) {
	n := clock.NewNode("A", clock.NewVirtual(1_700_000_000_000), -5_000)
	if got := ClockOf(n).Now().UnixMilli(); got != n.NowMs() {
		t.Fatalf("ClockOf = %d, want %d", got, n.NowMs())
	}
}

// nowStore is the least store that reads time.Now: only NowMs matters here.
type nowStore struct{ store.Store }

func (nowStore) NowMs(context.Context) (int64, error) { return time.Now().UnixMilli(), nil }

// Run after run in one bubble, each store reports the harness's time,
// although the bubble's clock cannot go back to a run's start.
func TestStoreReportsHarnessTimeRunAfterRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		open := Store(func() (store.Store, error) { return nowStore{}, nil })
		for run := range 3 {
			v := clock.NewVirtual(1_700_000_000_000)
			s, err := open(v)
			if err != nil {
				t.Fatal(err)
			}
			v.Advance(int64(run+1) * 60_000)
			if got, err := s.NowMs(t.Context()); err != nil || got != v.NowMs() {
				t.Fatalf("run %d: NowMs = %d, %v; want the harness's %d", run, got, err, v.NowMs())
			}
		}
	})
}
