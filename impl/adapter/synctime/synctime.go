// Package synctime lets the harness drive the time of library code that
// takes no clock. There are two ways, by what the library reads:
//
//   - A library that reads time.Now (or time.Since, timers, tickers) runs
//     inside a testing/synctest bubble, whose fake clock this package keeps
//     at the harness's virtual time: Store wraps such a store so that every
//     call first advances the bubble's clock to the harness's time (a
//     time.Sleep that a bubble completes at once). The bubble's clock only
//     moves forward and is the same for every goroutine in it, so this way
//     cannot express per-node clock skew, nor a wall clock stepping back:
//     use it for stores, whose time is one store clock that moves forward,
//     and give HLCs a clock instead. The harness's scenarios move a store's
//     time forward only, so every consumption property can be checked this
//     way; the linearizability check, whose clients move one shared clock
//     from many goroutines, cannot.
//   - A library that takes a clock — a func() time.Time, or an interface
//     with Now() time.Time — gets Clock or NowFunc over the harness's
//     clock.Source: per-node skew and steps backwards then reach it as they
//     are (a node's wall clock for an HLC, hlcformat.WallNs for one that
//     reads nanoseconds).
//
// Times are whole milliseconds, the harness's unit.
package synctime

import (
	"context"
	"fmt"
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
}

// Follow returns a Follower of src.
func Follow(src clock.Source) *Follower { return &Follower{src: src} }

// Sync advances the bubble's clock to src's time (plus the offset). It
// fails if that is behind the bubble's clock: a bubble's time cannot go
// back. Outside a bubble the machine's clock is years ahead of the
// harness's, so Sync fails there too, rather than sleeping.
func (f *Follower) Sync() error {
	want := time.UnixMilli(f.src.NowMs() + f.offsetMs)
	d := time.Until(want)
	if d < 0 {
		return fmt.Errorf("synctime: the harness's time %s is %v behind this goroutine's clock; a synctest bubble's time only moves forward (is the store used inside synctest.Test?)",
			want.UTC().Format(time.RFC3339Nano), -d)
	}
	if d > 0 {
		time.Sleep(d)
	}
	return nil
}

// Store returns a store constructor for system.WithStore (or
// storetest-style helpers) over a store that reads time.Now: open builds
// the library's store, and every call on it first brings the bubble's clock
// to the harness's store clock. Use it inside synctest.Test. A bubble's
// clock cannot go back, yet every run starts its virtual time afresh: a
// later run's store lives ahead of the harness's time by the bubble's lead
// (and the first runs behind it, in the bubble's year 2000), and the
// wrapper takes the lead off every time the store reports. The bubble's
// clock then moves only as far as the scenarios move the harness's time:
// rapid stops drawing when a day of the bubble's time has passed, so a hunt
// in one bubble draws at most about a day's worth of scenarios' virtual
// time (thousands of consumption scenarios); HuntResult.Checks says how
// many it played. A SplitTx
// loses its two-step commit through the wrapper; Crasher and Closer are
// kept.
func Store(open func() (store.Store, error)) func(clock.Source) (store.Store, error) {
	return func(src clock.Source) (store.Store, error) {
		f := Follow(src)
		// The store lives at the harness's time plus a lead: the bubble's
		// clock minus the harness's. A fresh bubble starts in 2000, years
		// behind the harness's 2023, and its lead is negative: jumping the
		// bubble's clock years forward instead would tell rapid, which
		// stops a check a (bubble's) day after it started, that a scenario
		// takes years, and it would stop after the first one.
		if lead := time.Now().UnixMilli() - src.NowMs(); lead < maxLeadMs {
			f.offsetMs = lead
		}
		if err := f.Sync(); err != nil {
			return nil, err
		}
		s, err := open()
		if err != nil {
			return nil, err
		}
		return &synced{s: s, f: f}, nil
	}
}

// maxLeadMs bounds the lead a bubble's clock may gather over the
// harness's start time, run after run. The harness's virtual time starts in
// November 2023; the machine's clock is years past it, so a goroutine
// outside a bubble is never mistaken for one with a lead, and Sync fails
// instead of sleeping for real.
const maxLeadMs = 2 * 365 * 24 * 3600 * 1000

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
	return &syncedTx{tx: tx, s: s}, nil
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
