package redisstore_test

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/redis/go-redis/v9"

	"github.com/idemcheck/idemcheck/impl/adapter/redisstore"
	"github.com/idemcheck/idemcheck/impl/contract/clock"
	"github.com/idemcheck/idemcheck/impl/contract/store"
)

// The contract, one rule at a time, sequentially (the style of storetest).
// storetest.Run itself is not used: its concurrent checks race a takeover
// against a two-step commit, which this store loses by design, and a test
// that fails depending on the Go scheduler proves nothing reproducible.

const (
	startMs = 1_700_000_000_000
	leaseMs = 1_000
)

type fixture struct {
	t   *testing.T
	ctx context.Context
	clk *clock.Virtual
	s   *redisstore.Store
}

func newFixture(t *testing.T) *fixture {
	clk := clock.NewVirtual(startMs)
	return &fixture{t: t, ctx: context.Background(), clk: clk, s: open(t, clk)}
}

func k(consumer, id string) store.Key { return store.Key{Tenant: "t1", Consumer: consumer, ID: id} }

func entry(consumer, id string) store.Entry {
	return store.Entry{Consumer: consumer, EventID: id, OrderID: "o-" + id, UserID: "u-" + id, AmountCents: 100}
}

func (f *fixture) claim(key store.Key) store.Claim {
	f.t.Helper()
	c, err := f.s.Claim(f.ctx, key, leaseMs)
	if err != nil {
		f.t.Fatalf("claim %s: %v", key, err)
	}
	return c
}

func (f *fixture) commit(key store.Key, token uint64, es ...store.Entry) (store.CommitResult, error) {
	f.t.Helper()
	tx, err := f.s.Begin(f.ctx, key, token)
	if err != nil {
		f.t.Fatalf("begin %s: %v", key, err)
	}
	for _, e := range es {
		tx.Credit(e)
	}
	return tx.Commit(f.ctx)
}

type snapshot struct {
	Records []store.Record
	Ledger  []store.Entry
}

func (f *fixture) snap() snapshot {
	f.t.Helper()
	r, err := f.s.Records(f.ctx)
	if err != nil {
		f.t.Fatal(err)
	}
	l, err := f.s.Ledger(f.ctx)
	if err != nil {
		f.t.Fatal(err)
	}
	return snapshot{r, l}
}

func (f *fixture) equal(what string, got, want any) {
	f.t.Helper()
	if d := cmp.Diff(want, got, cmpopts.EquateEmpty()); d != "" {
		f.t.Errorf("%s (-want +got):\n%s", what, d)
	}
}

func TestClaimLeaseTakeover(t *testing.T) {
	f := newFixture(t)
	key := k("ledger", "e1")
	first := f.claim(key)
	f.equal("first claim", first, store.Claim{Outcome: store.Acquired, Token: 1, Attempt: 1, AtMs: startMs})
	f.equal("claim under a valid lease", f.claim(key), store.Claim{Outcome: store.Locked, AtMs: startMs})
	f.clk.Advance(leaseMs)
	f.equal("claim after the lease", f.claim(key), store.Claim{Outcome: store.Acquired, Token: 2, Attempt: 2, Takeover: true, AtMs: startMs + leaseMs})
	if _, err := f.commit(key, first.Token, entry("ledger", "e1")); !errors.Is(err, store.ErrStaleToken) {
		t.Errorf("commit with the taken-over token: %v, want a stale token error", err)
	}
	f.equal("ledger after a stale commit", f.snap().Ledger, []store.Entry(nil))
}

func TestCommitSettles(t *testing.T) {
	f := newFixture(t)
	key := k("ledger", "e1")
	c := f.claim(key)
	f.clk.Advance(5)
	res, err := f.commit(key, c.Token, entry("ledger", "e1"))
	if err != nil {
		t.Fatal(err)
	}
	f.equal("commit", res, store.CommitResult{Credited: 1, AtMs: startMs + 5})
	f.equal("state", f.snap(), snapshot{
		Records: []store.Record{{Key: key, State: store.Processed, StartedAtMs: startMs, FinishedAtMs: startMs + 5, Attempts: 1, Token: c.Token}},
		Ledger:  []store.Entry{entry("ledger", "e1")},
	})
	f.equal("claim of a processed key", f.claim(key), store.Claim{Outcome: store.AlreadyProcessed, AtMs: startMs + 5})
	if _, err := f.commit(key, c.Token, entry("ledger", "e1")); !errors.Is(err, store.ErrNotHeld) {
		t.Errorf("second commit: %v, want not held", err)
	}
	if _, err := f.commit(k("ledger", "never"), 7); !errors.Is(err, store.ErrNotHeld) {
		t.Errorf("commit without a claim: %v, want not held", err)
	}
}

// TestEffectWithoutMark is the weakness at the store's level: between the
// two writes, the ledger holds the effect and the record is not processed.
func TestEffectWithoutMark(t *testing.T) {
	f := newFixture(t)
	key := k("ledger", "e1")
	c := f.claim(key)
	tx, _ := f.s.Begin(f.ctx, key, c.Token)
	tx.Credit(entry("ledger", "e1"))
	split, ok := tx.(store.SplitTx)
	if !ok {
		t.Fatal("the unit of work is not a store.SplitTx")
	}
	if _, err := split.CommitEffect(f.ctx); err != nil {
		t.Fatal(err)
	}
	s := f.snap()
	if len(s.Ledger) != 1 || s.Records[0].State != store.Processing {
		t.Fatalf("after the effect: %+v, want the entry landed and the record still processing", s)
	}
	if err := split.CommitMark(f.ctx); err != nil {
		t.Fatal(err)
	}
	if r, _, _ := f.s.Get(f.ctx, key); r.State != store.Processed {
		t.Errorf("after the mark: %+v, want processed", r)
	}
}

func TestLedgerUniqueAndKeysScoped(t *testing.T) {
	f := newFixture(t)
	for _, key := range []store.Key{k("ledger", "e1"), k("audit", "e1"), {Consumer: "ledger", ID: "e1"}} {
		if c := f.claim(key); c.Outcome != store.Acquired {
			t.Fatalf("claim %s = %+v: the same id under another consumer or tenant is another operation", key, c)
		}
	}
	res, err := f.commit(k("ledger", "e1"), 1, entry("ledger", "e1"))
	if err != nil || res.Credited != 1 {
		t.Fatalf("first commit %+v %v", res, err)
	}
	res, err = f.commit(store.Key{Consumer: "ledger", ID: "e1"}, 3, entry("ledger", "e1"))
	f.equal("second credit of one (consumer, event)", res, store.CommitResult{DuplicatesIgnored: 1, AtMs: startMs})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.commit(k("audit", "e1"), 2, entry("audit", "e1")); err != nil {
		t.Fatal(err)
	}
	f.equal("ledger, sorted by (consumer, event)", f.snap().Ledger, []store.Entry{entry("audit", "e1"), entry("ledger", "e1")})
	var keys []store.Key
	for _, r := range f.snap().Records {
		keys = append(keys, r.Key)
	}
	f.equal("records, sorted by key", keys, []store.Key{{Consumer: "ledger", ID: "e1"}, k("audit", "e1"), k("ledger", "e1")})
}

func TestFail(t *testing.T) {
	f := newFixture(t)
	key := k("ledger", "e1")
	c := f.claim(key)
	if err := f.s.Fail(f.ctx, key, c.Token+1, "x"); !errors.Is(err, store.ErrStaleToken) {
		t.Errorf("fail with a wrong token: %v", err)
	}
	if err := f.s.Fail(f.ctx, key, c.Token, "timeout"); err != nil {
		t.Fatal(err)
	}
	r, _, _ := f.s.Get(f.ctx, key)
	f.equal("failed record", r, store.Record{Key: key, State: store.Failed, StartedAtMs: startMs, Attempts: 1, Token: c.Token, LastError: "timeout"})
	f.equal("claim after a fail", f.claim(key), store.Claim{Outcome: store.Acquired, Token: c.Token + 1, Attempt: 2, AtMs: startMs})
}

func TestCleanupByStoreTime(t *testing.T) {
	f := newFixture(t)
	key := k("ledger", "e1")
	c := f.claim(key)
	if _, err := f.commit(key, c.Token, entry("ledger", "e1")); err != nil {
		t.Fatal(err)
	}
	f.clk.Advance(59_999)
	if got, _ := f.s.Cleanup(f.ctx, 60_000); len(got) != 0 {
		t.Errorf("cleanup inside retention removed %v", got)
	}
	f.clk.Advance(1)
	got, err := f.s.Cleanup(f.ctx, 60_000)
	f.equal("cleanup at retention", got, []store.Key{key})
	if err != nil {
		t.Fatal(err)
	}
	if again := f.claim(key); again.Outcome != store.Acquired || again.Token <= c.Token {
		t.Errorf("claim after cleanup = %+v, want acquired with a token above %d", again, c.Token)
	}
}

// TestCloseDropsTheRun: every run starts empty, so Close must leave no key
// of the run behind.
func TestCloseDropsTheRun(t *testing.T) {
	ctx := context.Background()
	s, err := redisstore.Open(ctx, addr(t), clock.NewVirtual(startMs))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Claim(ctx, k("ledger", "e1"), leaseMs); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	rdb := redis.NewClient(&redis.Options{Addr: addr(t), Protocol: 2, DisableIdentity: true})
	defer rdb.Close()
	keys, err := rdb.Keys(ctx, s.Prefix()+"*").Result()
	if err != nil {
		t.Fatal(err)
	}
	if len(keys) != 0 {
		t.Errorf("keys left after Close: %v", keys)
	}
}

func TestOpenUnreachable(t *testing.T) {
	_, err := redisstore.Open(context.Background(), "127.0.0.1:1", clock.NewVirtual(0))
	if err == nil {
		t.Fatal("Open of a closed port succeeded")
	}
	t.Log(err)
}
