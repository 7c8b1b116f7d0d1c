package synctime_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/idemcheck/idemcheck/faults/scenario"
	"github.com/idemcheck/idemcheck/impl/adapter/synctime"
	"github.com/idemcheck/idemcheck/impl/contract/clock"
	"github.com/idemcheck/idemcheck/impl/contract/store"
	"github.com/idemcheck/idemcheck/impl/reference/memstore"
	"github.com/idemcheck/idemcheck/impl/system"
	"github.com/idemcheck/idemcheck/internal/timepatch"
	"github.com/idemcheck/idemcheck/properties"
)

func TestSyncFollowsTheHarnessForwardOnly(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		v := clock.NewVirtual(1_700_000_000_000)
		f := synctime.Follow(v)
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
		behind := synctime.Follow(clock.NewVirtual(1_600_000_000_000))
		if err := behind.Sync(); err == nil || !strings.Contains(err.Error(), "only moves forward") {
			t.Fatalf("a harness clock behind the bubble: error %v", err)
		}
	})
}

func TestSyncOutsideABubbleFails(t *testing.T) {
	if err := synctime.Follow(clock.NewVirtual(1_700_000_000_000)).Sync(); err == nil {
		t.Fatal("Sync outside a bubble did not fail")
	}
}

func TestClockOfReadsTheSource(t *testing.T) {
	n := clock.NewNode("A", clock.NewVirtual(1_700_000_000_000), -5_000)
	if got := synctime.ClockOf(n).Now().UnixMilli(); got != n.NowMs() {
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
		open := synctime.Store(func() (store.Store, error) { return nowStore{}, nil })
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
		target := system.WithStore("memstore-in-a-bubble", synctime.Store(func() (store.Store, error) { return memstore.New(wallNow{}), nil }))
		res := properties.Hunt(target, properties.HuntOptions{Kind: scenario.KindConsumption,
			Properties: properties.ForKind(scenario.KindConsumption), Checks: 200, Seed: 1})
		if res.Failed {
			t.Fatalf("the reference store in a bubble failed %s: %s", res.Law, res.Message)
		}
		if res.Checks != 200 {
			t.Fatalf("the hunt played %d scenarios of 200", res.Checks)
		}
		moved := time.Since(start)
		if moved > 24*time.Hour {
			t.Errorf("the bubble's clock moved %v for 200 scenarios", moved)
		}
		// The hunt's duration is the machine's, not the bubble's hours.
		if moved > time.Minute && res.Elapsed >= moved {
			t.Errorf("the hunt reports %v elapsed: the bubble's %v, not the machine's time", res.Elapsed, moved)
		}
		t.Logf("200 scenarios moved the bubble's clock %v; the hunt took %v", moved, res.Elapsed)
	})
}

// wallNow reads time.Now, as a library does.
type wallNow struct{}

func (wallNow) NowMs() int64 { return time.Now().UnixMilli() }

// A goroutine the library never stops is reported as a leak, not a panic;
// one stopped by Close is not.
func TestTestReportsLeakedGoroutines(t *testing.T) {
	leak, err := synctime.Test(t, func(t *testing.T) {
		tick := time.NewTicker(time.Second)
		go func() {
			for range tick.C {
			}
		}()
		time.Sleep(3 * time.Second)
	})
	if err != nil || leak == nil || leak.Goroutines != 1 || !strings.Contains(leak.Stack, "TestTestReportsLeakedGoroutines") {
		t.Fatalf("leak %+v, error %v: want one goroutine with its stack", leak, err)
	}
	leak, err = synctime.Test(t, func(t *testing.T) {
		tick := time.NewTicker(time.Second)
		done := make(chan struct{})
		go func() {
			for {
				select {
				case <-tick.C:
				case <-done:
					return
				}
			}
		}()
		t.Cleanup(func() { close(done) })
		time.Sleep(3 * time.Second)
	})
	if err != nil || leak != nil {
		t.Fatalf("a stopped ticker: leak %+v, error %v", leak, err)
	}
	_, err = synctime.Test(t, func(t *testing.T) {
		<-make(chan struct{})
	})
	if err == nil || !strings.Contains(err.Error(), "blocked for ever") {
		t.Fatalf("a bubble blocked for ever: error %v", err)
	}
}

// splitStore's units of work commit in two writes.
type splitStore struct{ *memstore.Store }

type splitTx struct {
	store.Tx
	effect, mark int
}

func (s splitStore) Begin(ctx context.Context, key store.Key, token uint64) (store.Tx, error) {
	tx, err := s.Store.Begin(ctx, key, token)
	return &splitTx{Tx: tx}, err
}

func (t *splitTx) CommitEffect(ctx context.Context) (store.CommitResult, error) {
	t.effect++
	return t.Tx.Commit(ctx)
}

func (t *splitTx) CommitMark(context.Context) error { t.mark++; return nil }

// A library's two-step commit stays two steps through the wrapper.
func TestStoreKeepsSplitTx(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		v := clock.NewVirtual(1_700_000_000_000)
		s, err := synctime.Store(func() (store.Store, error) { return splitStore{memstore.New(wallNow{})}, nil })(v)
		if err != nil {
			t.Fatal(err)
		}
		k := store.Key{Consumer: "c", ID: "e1"}
		c, err := s.Claim(t.Context(), k, 1000)
		if err != nil {
			t.Fatal(err)
		}
		tx, err := s.Begin(t.Context(), k, c.Token)
		if err != nil {
			t.Fatal(err)
		}
		split, ok := tx.(store.SplitTx)
		if !ok {
			t.Fatalf("the wrapped unit of work %T is no store.SplitTx", tx)
		}
		v.Advance(5)
		res, err := split.CommitEffect(t.Context())
		if err != nil || res.AtMs != v.NowMs() {
			t.Fatalf("CommitEffect = %+v, %v; want the harness's time %d", res, err, v.NowMs())
		}
		if err := split.CommitMark(t.Context()); err != nil {
			t.Fatal(err)
		}
	})
}

func TestStoreOutsideABubbleSaysSo(t *testing.T) {
	_, err := synctime.Store(func() (store.Store, error) { return memstore.New(wallNow{}), nil })(clock.NewVirtual(1_700_000_000_000))
	if !errors.Is(err, synctime.ErrNoBubble) {
		t.Fatalf("error %v, want ErrNoBubble", err)
	}
}

// A patch of time.Now elsewhere in the process is named, not taken for a
// clock behind the harness.
func TestAReplacedTimeNowIsNamed(t *testing.T) {
	fixed := time.Date(2031, 1, 2, 3, 4, 5, 0, time.UTC)
	var err error
	_, bubbleErr := synctime.Test(t, func(t *testing.T) {
		restore, perr := timepatch.Now(func() time.Time { return fixed })
		if errors.Is(perr, timepatch.ErrUnsupported) {
			err = perr
			return
		}
		if perr != nil {
			t.Fatal(perr)
		}
		defer restore()
		_, err = synctime.Store(func() (store.Store, error) { return memstore.New(wallNow{}), nil })(clock.NewVirtual(1_700_000_000_000))
	})
	if errors.Is(err, timepatch.ErrUnsupported) {
		t.Skip(err)
	}
	if bubbleErr != nil || !errors.Is(err, synctime.ErrTimeNowReplaced) {
		t.Fatalf("under a patch of time.Now: error %v (bubble %v), want ErrTimeNowReplaced", err, bubbleErr)
	}
	t.Log(err)
}
