package synctime

import (
	"context"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/idemcheck/idemcheck/faults/scenario"
	"github.com/idemcheck/idemcheck/impl/contract/clock"
	"github.com/idemcheck/idemcheck/impl/contract/store"
	"github.com/idemcheck/idemcheck/impl/reference/memstore"
	"github.com/idemcheck/idemcheck/impl/system"
	"github.com/idemcheck/idemcheck/properties"
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

// A hunt in a fresh bubble plays every scenario it is asked for: the first
// store does not jump the bubble's clock years forward, which made rapid
// judge a scenario to take years and stop after the first.
func TestHuntInAFreshBubblePlaysEveryScenario(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		target := system.WithStore("memstore-in-a-bubble", Store(func() (store.Store, error) { return memstore.New(wallNow{}), nil }))
		res := properties.Hunt(target, properties.HuntOptions{Kind: scenario.KindConsumption,
			Properties: properties.ForKind(scenario.KindConsumption), Checks: 200, Seed: 1})
		if res.Failed {
			t.Fatalf("the reference store in a bubble failed %s: %s", res.Law, res.Message)
		}
		if res.Checks != 200 {
			t.Fatalf("the hunt played %d scenarios of 200", res.Checks)
		}
		if moved := time.Since(start); moved > 24*time.Hour {
			t.Errorf("the bubble's clock moved %v for 200 scenarios", moved)
		}
	})
}

// wallNow reads time.Now, as a library does.
type wallNow struct{}

func (wallNow) NowMs() int64 { return time.Now().UnixMilli() }
