// Package synctime lets the harness drive the time of library code that
// takes no clock. There are two ways, by what the library reads:
//
//   - A library that reads time.Now (or time.Since, timers, tickers) runs
//     inside a testing/synctest bubble, whose fake clock this package keeps
//     at the harness's virtual time: Store wraps such a store so that every
//     call first advances the bubble's clock to the harness's time (a
//     time.Sleep that a bubble completes at once). Library describes such a
//     store once for every check: system.WithTimeNowStore (the invariants,
//     under properties.Conformance and CheckProperty), storetest.Run (the
//     contract) and linearizability.CheckStore, each given the Library, play every
//     scenario, rule or recording in a bubble of its own (Test), so the
//     library's timers and tickers move with the scenario too. A goroutine
//     the library leaves running after the run (a ticker it never stops) is
//     reported as a leak, or tolerated when Library.Lingering says why.
//     The bubble's clock only moves forward and is the same for every
//     goroutine in it, so this way cannot express per-node clock skew, nor
//     a wall clock stepping back: use it for stores, whose time is one store
//     clock that moves forward, and give HLCs a clock instead.
//   - A library that takes a clock — a func() time.Time, or an interface
//     with Now() time.Time — gets Clock or NowFunc over the harness's
//     clock.Source: per-node skew and steps backwards then reach it as they
//     are (a node's wall clock for an HLC, hlcformat.WallNs for one that
//     reads nanoseconds).
//
// Something else in the process that replaces time.Now (a monkey patch left
// in place by another test) takes the library's clock away from the bubble;
// Sync detects it and says so.
//
// Times are whole milliseconds, the harness's unit.
package synctime

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing/synctest"
	"time"

	"github.com/idemcheck/idemcheck/impl/contract/clock"
	"github.com/idemcheck/idemcheck/impl/contract/store"
)

// NowFunc returns src as a func() time.Time, for a library that takes one.
func NowFunc(src clock.Source) func() time.Time {
	return func() time.Time { return time.UnixMilli(src.NowMs()) }
}

// Clock is the usual shape of a clock interface a library takes.
type Clock interface {
	Now() time.Time
}

// ClockOf returns src as a Clock.
func ClockOf(src clock.Source) Clock { return nowFunc(NowFunc(src)) }

type nowFunc func() time.Time

func (f nowFunc) Now() time.Time { return f() }

// Follower keeps the clock of the synctest bubble it is used in at a
// harness clock's time, plus a fixed offset.
type Follower struct {
	src      clock.Source
	offsetMs int64
	// lenient: a harness time behind the bubble's clock is not an error.
	// Goroutines that move one harness clock and call the store at once
	// (a linearizability recording) race to the bubble's clock; the store
	// then reads a time a little ahead of the harness's, which is still
	// its own clock moving forward.
	lenient bool
}

// Follow returns a Follower of src.
func Follow(src clock.Source) *Follower { return &Follower{src: src} }

// Sync advances the bubble's clock to src's time (plus the offset). It
// fails if that is behind the bubble's clock: a bubble's time cannot go
// back. Outside a bubble it fails too, rather than sleeping for real, and
// it fails when time.Now does not read the bubble's clock (something in the
// process replaced it), naming which.
func (f *Follower) Sync() error {
	want := time.UnixMilli(f.src.NowMs() + f.offsetMs)
	d := time.Until(want)
	if d < 0 {
		if f.lenient {
			return nil
		}
		return f.behind(want, -d)
	}
	if d > 0 {
		time.Sleep(d)
	}
	if got := time.Now(); !got.Equal(want) {
		if err := follows(); err != nil {
			return err
		}
		return fmt.Errorf("synctime: the bubble's clock reads %s after moving to %s", got.UTC().Format(time.RFC3339Nano), want.UTC().Format(time.RFC3339Nano))
	}
	return nil
}

// behind explains a harness time behind the clock time.Now reads.
func (f *Follower) behind(want time.Time, by time.Duration) error {
	if err := follows(); err != nil {
		return err
	}
	return fmt.Errorf("synctime: the harness's time %s is %v behind the bubble's clock; a synctest bubble's time only moves forward",
		want.UTC().Format(time.RFC3339Nano), by)
}

// ErrNoBubble is what a store of Store answers outside a testing/synctest
// bubble: there time.Now is the machine's clock, which the harness cannot
// move.
var ErrNoBubble = errors.New("synctime: the store reads time.Now but runs outside a testing/synctest bubble, where the harness cannot move its clock; " +
	"check it with properties.Conformance or CheckProperty on system.WithTimeNowStore, storetest.Run or linearizability.CheckStore given the Library (each run in a bubble of its own), or call properties.Hunt with HuntOptions.T")

// ErrTimeNowReplaced is what a store of Store answers when time.Now does
// not read the bubble's clock although it runs in one: something in the
// process replaced time.Now.
var ErrTimeNowReplaced = errors.New("synctime: time.Now does not read the testing/synctest bubble's clock: something in this process replaced it " +
	"(a monkey patch of time.Now, such as gomonkey's ApplyFunc, left in place by another test or an init function), so neither the library's clock nor the harness's moves with the scenario; remove the patch, or give the library a clock (NowFunc)")

// follows reports why time.Now does not follow the bubble's clock, if it
// does not: the goroutine is in no bubble, or time.Now was replaced. In a
// bubble a sleep of a millisecond moves time.Now by exactly that.
func follows() error {
	if !InBubble() {
		return ErrNoBubble
	}
	before := time.Now()
	time.Sleep(time.Millisecond)
	if moved := time.Since(before); moved != time.Millisecond {
		return fmt.Errorf("%w (after a sleep of 1ms in the bubble it moved %v, and reads %s)", ErrTimeNowReplaced, moved, time.Now().UTC().Format(time.RFC3339Nano))
	}
	return nil
}

// InBubble reports whether the calling goroutine runs in a testing/synctest
// bubble. It waits, as synctest.Wait does, until every other goroutine of
// the bubble is durably blocked.
func InBubble() (in bool) {
	defer func() {
		if p := recover(); p != nil {
			// Outside a bubble Wait panics; inside one it may only panic
			// because another goroutine is waiting already.
			in = !strings.Contains(fmt.Sprint(p), "not in a bubble")
		}
	}()
	synctest.Wait()
	return true
}

// Store returns a store constructor for system.WithStore (or
// storetest-style helpers) over a store that reads time.Now: open builds
// the library's store, and every call on it first brings the bubble's clock
// to the harness's store clock. It must be called in a testing/synctest
// bubble (ErrNoBubble otherwise): system.WithTimeNowStore, storetest's
// RunTimeNow and linearizability's CheckTimeNowStore make one for every
// run. A bubble's clock cannot go back, yet every run starts its virtual
// time afresh: a store lives at the harness's time plus the bubble's lead
// (negative in a fresh bubble, which starts in 2000), and the wrapper takes
// the lead off every time the store reports. Sharing one bubble among many
// runs (a hunt inside synctest.Test) works, but the bubble's clock then
// moves as far as all the scenarios together move the harness's time, and
// rapid, which reads it, stops drawing once a day of it has passed.
// SplitTx, Crasher and Closer are kept.
func Store(open func() (store.Store, error)) func(clock.Source) (store.Store, error) {
	return func(src clock.Source) (store.Store, error) {
		return newSynced(src, open, false)
	}
}

func newSynced(src clock.Source, open func() (store.Store, error), lenient bool) (store.Store, error) {
	// In a bubble, with time.Now its clock (not replaced by a patch).
	if err := follows(); err != nil {
		return nil, err
	}
	f := Follow(src)
	f.lenient = lenient
	// The store lives at the harness's time plus a lead: the bubble's
	// clock minus the harness's. A fresh bubble starts in 2000, years
	// behind the harness's 2023, and its lead is negative: jumping the
	// bubble's clock years forward instead would tell rapid, which stops
	// a check a (bubble's) day after it started, that a scenario takes
	// years.
	f.offsetMs = time.Now().UnixMilli() - src.NowMs()
	if err := f.Sync(); err != nil {
		return nil, err
	}
	s, err := open()
	if err != nil {
		return nil, err
	}
	return &synced{s: s, f: f}, nil
}

type synced struct {
	s store.Store
	f *Follower
}

func (s *synced) Claim(ctx context.Context, key store.Key, leaseMs int64) (store.Claim, error) {
	if err := s.f.Sync(); err != nil {
		return store.Claim{}, err
	}
	c, err := s.s.Claim(ctx, key, leaseMs)
	c.AtMs = s.back(c.AtMs)
	return c, err
}

// back is a time the store reported, in the harness's time.
func (s *synced) back(ms int64) int64 {
	if ms == 0 {
		return 0
	}
	return ms - s.f.offsetMs
}

func (s *synced) record(r store.Record) store.Record {
	r.StartedAtMs, r.FinishedAtMs, r.LeaseUntilMs = s.back(r.StartedAtMs), s.back(r.FinishedAtMs), s.back(r.LeaseUntilMs)
	return r
}

func (s *synced) Begin(ctx context.Context, key store.Key, token uint64) (store.Tx, error) {
	if err := s.f.Sync(); err != nil {
		return nil, err
	}
	tx, err := s.s.Begin(ctx, key, token)
	if err != nil {
		return nil, err
	}
	synced := &syncedTx{tx: tx, s: s}
	if split, ok := tx.(store.SplitTx); ok {
		// The library's two writes stay two steps, so a crash can fall
		// between them as it can in production.
		return &syncedSplitTx{syncedTx: synced, split: split}, nil
	}
	return synced, nil
}

func (s *synced) Fail(ctx context.Context, key store.Key, token uint64, reason string) error {
	if err := s.f.Sync(); err != nil {
		return err
	}
	return s.s.Fail(ctx, key, token, reason)
}

func (s *synced) Get(ctx context.Context, key store.Key) (store.Record, bool, error) {
	if err := s.f.Sync(); err != nil {
		return store.Record{}, false, err
	}
	r, ok, err := s.s.Get(ctx, key)
	return s.record(r), ok, err
}

func (s *synced) Cleanup(ctx context.Context, retentionMs int64) ([]store.Key, error) {
	if err := s.f.Sync(); err != nil {
		return nil, err
	}
	return s.s.Cleanup(ctx, retentionMs)
}

func (s *synced) Records(ctx context.Context) ([]store.Record, error) {
	if err := s.f.Sync(); err != nil {
		return nil, err
	}
	rs, err := s.s.Records(ctx)
	for i := range rs {
		rs[i] = s.record(rs[i])
	}
	return rs, err
}

func (s *synced) Ledger(ctx context.Context) ([]store.Entry, error) {
	if err := s.f.Sync(); err != nil {
		return nil, err
	}
	return s.s.Ledger(ctx)
}

func (s *synced) NowMs(ctx context.Context) (int64, error) {
	if err := s.f.Sync(); err != nil {
		return 0, err
	}
	now, err := s.s.NowMs(ctx)
	return s.back(now), err
}

// Close closes the library's store if it has resources.
func (s *synced) Close() error {
	if c, ok := s.s.(store.Closer); ok {
		return c.Close()
	}
	return nil
}

type syncedTx struct {
	tx store.Tx
	s  *synced
}

func (t *syncedTx) Credit(e store.Entry) { t.tx.Credit(e) }

func (t *syncedTx) Commit(ctx context.Context) (store.CommitResult, error) {
	if err := t.s.f.Sync(); err != nil {
		return store.CommitResult{}, err
	}
	res, err := t.tx.Commit(ctx)
	res.AtMs = t.s.back(res.AtMs)
	return res, err
}

func (t *syncedTx) Rollback(ctx context.Context) error { return t.tx.Rollback(ctx) }

// Crash passes a crash on to the library's unit of work, or rolls it back
// if it cannot crash.
func (t *syncedTx) Crash() {
	if c, ok := t.tx.(store.Crasher); ok {
		c.Crash()
		return
	}
	_ = t.tx.Rollback(context.Background())
}

// syncedSplitTx is the unit of work of a library that commits in two
// writes (store.SplitTx).
type syncedSplitTx struct {
	*syncedTx
	split store.SplitTx
}

func (t *syncedSplitTx) CommitEffect(ctx context.Context) (store.CommitResult, error) {
	if err := t.s.f.Sync(); err != nil {
		return store.CommitResult{}, err
	}
	res, err := t.split.CommitEffect(ctx)
	res.AtMs = t.s.back(res.AtMs)
	return res, err
}

func (t *syncedSplitTx) CommitMark(ctx context.Context) error {
	if err := t.s.f.Sync(); err != nil {
		return err
	}
	return t.split.CommitMark(ctx)
}
