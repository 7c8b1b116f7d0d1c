// Package sqlstoretest holds the tests the SQL stores share beyond the
// contract's conformance suite (impl/store/storetest): what a crash of a
// worker in the middle of its transaction leaves, and the database's clock
// as the store's time.
package sqlstoretest

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/idemcheck/idemcheck/impl/adapter/sqlstore"
	"github.com/idemcheck/idemcheck/impl/contract/clock"
	"github.com/idemcheck/idemcheck/impl/contract/store"
)

// Open opens a fresh store for t whose time is c (nil: the database's
// clock), and registers its cleanup with t.
type Open func(t *testing.T, c clock.Source) store.Store

const leaseMs = 1_000

var (
	key   = store.Key{Tenant: "t1", Consumer: "ledger", ID: "e1"}
	entry = store.Entry{Consumer: "ledger", EventID: "e1", OrderID: "o1", UserID: "u1", AmountCents: 100}
)

// callTimeout bounds each test's calls: a lock the crashed connection kept
// would otherwise hang the test instead of failing it.
const callTimeout = 20 * time.Second

type snapshot struct {
	Records []store.Record
	Ledger  []store.Entry
}

func snap(t *testing.T, ctx context.Context, s store.Store) snapshot {
	t.Helper()
	rs, err := s.Records(ctx)
	if err != nil {
		t.Fatalf("Records: %v", err)
	}
	l, err := s.Ledger(ctx)
	if err != nil {
		t.Fatalf("Ledger: %v", err)
	}
	return snapshot{rs, l}
}

func claim(t *testing.T, ctx context.Context, s store.Store) store.Claim {
	t.Helper()
	c, err := s.Claim(ctx, key, leaseMs)
	if err != nil || c.Outcome != store.Acquired {
		t.Fatalf("Claim = %+v, %v; want acquired", c, err)
	}
	return c
}

func begin(t *testing.T, ctx context.Context, s store.Store, token uint64) store.Tx {
	t.Helper()
	tx, err := s.Begin(ctx, key, token)
	if err != nil {
		t.Fatalf("Begin: %v", err)
	}
	tx.Credit(entry)
	return tx
}

func crasher(t *testing.T, tx store.Tx) store.Crasher {
	t.Helper()
	c, ok := tx.(store.Crasher)
	if !ok {
		t.Fatalf("%T does not implement store.Crasher", tx)
	}
	return c
}

// RunCrash checks that a worker crashing with an open unit of work — before
// Commit, or inside it at each CommitPoint, after its writes were sent —
// lands nothing, leaves the claim as it was, and holds no lock afterwards:
// the same token commits at once on a new unit of work.
func RunCrash(t *testing.T, open Open) {
	t.Run("BeforeCommit", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(t.Context(), callTimeout)
		defer cancel()
		s := open(t, clock.NewVirtual(1_000_000))
		c := claim(t, ctx, s)
		before := snap(t, ctx, s)
		tx := begin(t, ctx, s, c.Token)
		crasher(t, tx).Crash()
		crasher(t, tx).Crash() // a second crash is a no-op
		if _, err := tx.Commit(ctx); err == nil {
			t.Errorf("Commit after Crash succeeded")
		}
		if err := tx.Rollback(ctx); err != nil {
			t.Errorf("Rollback after Crash: %v", err)
		}
		if d := cmp.Diff(before, snap(t, ctx, s), cmpopts.EquateEmpty()); d != "" {
			t.Errorf("crash before commit changed the store (-before +after):\n%s", d)
		}
		settle(t, ctx, s, c.Token)
	})
	for _, p := range []sqlstore.CommitPoint{sqlstore.AfterFencingCheck, sqlstore.AfterLedgerInsert, sqlstore.AfterMark} {
		t.Run(p.String(), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), callTimeout)
			defer cancel()
			s := open(t, clock.NewVirtual(1_000_000))
			c := claim(t, ctx, s)
			before := snap(t, ctx, s)
			tx := begin(t, ctx, s, c.Token)
			var crashedAt []sqlstore.CommitPoint
			hooked := sqlstore.WithCommitHook(ctx, func(at sqlstore.CommitPoint) {
				if at == p {
					crashedAt = append(crashedAt, at)
					crasher(t, tx).Crash()
				}
			})
			if _, err := tx.Commit(hooked); err == nil {
				t.Fatalf("Commit crashed at %s succeeded", p)
			}
			if len(crashedAt) != 1 {
				t.Fatalf("the commit passed %s %d times, want once", p, len(crashedAt))
			}
			if d := cmp.Diff(before, snap(t, ctx, s), cmpopts.EquateEmpty()); d != "" {
				t.Errorf("crash at %s changed the store (-before +after):\n%s", p, d)
			}
			settle(t, ctx, s, c.Token)
		})
	}
}

// settle commits the held claim on a new unit of work. It only succeeds at
// once if the crashed connection's transaction is gone: its row lock (or
// SQLite's write lock) would otherwise block it.
func settle(t *testing.T, ctx context.Context, s store.Store, token uint64) {
	t.Helper()
	res, err := begin(t, ctx, s, token).Commit(ctx)
	if err != nil {
		t.Fatalf("commit after the crash: %v", err)
	}
	if res.Credited != 1 {
		t.Errorf("commit after the crash = %+v, want one credit", res)
	}
}

// RunDatabaseClock checks a store opened without a clock: the database's
// clock is then the store's time, for claims, commits, leases and the
// cleanup cutoff. The bounds are the test machine's clock, which the local
// database shares, with a generous margin.
func RunDatabaseClock(t *testing.T, open Open) {
	const margin = int64(time.Minute / time.Millisecond)
	ctx, cancel := context.WithTimeout(t.Context(), callTimeout)
	defer cancel()
	s := open(t, nil)
	within := func(what string, ms, lo, hi int64) {
		t.Helper()
		if ms < lo-margin || ms > hi+margin {
			t.Errorf("%s = %d, want the database's time, within a minute of [%d, %d]", what, ms, lo, hi)
		}
	}
	lo := time.Now().UnixMilli()
	now, err := s.NowMs(ctx)
	if err != nil {
		t.Fatalf("NowMs: %v", err)
	}
	c := claim(t, ctx, s)
	res, err := begin(t, ctx, s, c.Token).Commit(ctx)
	if err != nil {
		t.Fatalf("Commit: %v", err)
	}
	hi := time.Now().UnixMilli()
	within("NowMs", now, lo, hi)
	within("claim time", c.AtMs, lo, hi)
	within("commit time", res.AtMs, lo, hi)
	if c.AtMs < now || res.AtMs < c.AtMs {
		t.Errorf("times went backwards: now %d, claim %d, commit %d", now, c.AtMs, res.AtMs)
	}
	r, _, err := s.Get(ctx, key)
	if err != nil {
		t.Fatalf("Get: %v", err)
	}
	if r.StartedAtMs != c.AtMs || r.FinishedAtMs != res.AtMs {
		t.Errorf("record %+v, want started at the claim's %d and finished at the commit's %d", r, c.AtMs, res.AtMs)
	}
	// A day's retention keeps the record; none deletes it, by the database's
	// clock, which is at or past its finishedAt.
	if keys, err := s.Cleanup(ctx, 24*60*60*1000); err != nil || len(keys) != 0 {
		t.Errorf("Cleanup with a day's retention = %v, %v; want nothing removed", keys, err)
	}
	keys, err := s.Cleanup(ctx, 0)
	if err != nil || len(keys) != 1 || keys[0] != key {
		t.Errorf("Cleanup with no retention = %v, %v; want [%s]", keys, err, key)
	}
	lease, err := s.Claim(ctx, store.Key{ID: "leased"}, leaseMs)
	if err != nil {
		t.Fatalf("Claim: %v", err)
	}
	if r, _, err := s.Get(ctx, store.Key{ID: "leased"}); err != nil || r.LeaseUntilMs != lease.AtMs+leaseMs {
		t.Errorf("lease until %d (%v), want the claim's time %d plus %d", r.LeaseUntilMs, err, lease.AtMs, leaseMs)
	}
}
