package mutant

import (
	"context"
	"errors"
	"testing"

	"github.com/idemcheck/idemcheck/impl/contract/clock"
	"github.com/idemcheck/idemcheck/impl/contract/store"
)

var racyKey = store.Key{Tenant: "acme", Consumer: "ledger", ID: "evt-1"}

func mustClaim(t *testing.T, s store.Store, lease int64, want store.Outcome) store.Claim {
	t.Helper()
	c, err := s.Claim(context.Background(), racyKey, lease)
	if err != nil {
		t.Fatalf("claim: %v", err)
	}
	if c.Outcome != want {
		t.Fatalf("claim = %+v, want outcome %s", c, want)
	}
	return c
}

func commitOne(s store.Store, token uint64) (store.CommitResult, error) {
	ctx := context.Background()
	tx, err := s.Begin(ctx, racyKey, token)
	if err != nil {
		return store.CommitResult{}, err
	}
	tx.Credit(store.Entry{Consumer: racyKey.Consumer, EventID: racyKey.ID, AmountCents: 100})
	return tx.Commit(ctx)
}

// TestSequentialLifecycle walks one worker through the lifecycle, with no
// takeover and no token from before a failure. Every mutant passes it: their
// bugs need concurrency, a takeover or a stale holder, which is what the
// linearizability checker's concurrent histories bring.
func TestConcurrencyMutantsPassASequentialLifecycle(t *testing.T) {
	for name, newStore := range map[string]func(clock.Source) store.Store{
		"claim-without-row-lock": NewClaimWithoutRowLock, "takeover-keeps-token": NewTakeoverKeepsToken,
		"fail-resets-token": NewFailResetsToken, "commit-lost-in-write-back": NewCommitLostInWriteBack,
	} {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			clk := clock.NewVirtual(1000)
			s := newStore(clk)
			c1 := mustClaim(t, s, 50, store.Acquired)
			if c1.Attempt != 1 || c1.Takeover || c1.AtMs != 1000 {
				t.Fatalf("first claim = %+v", c1)
			}
			mustClaim(t, s, 50, store.Locked)
			if err := s.Fail(ctx, racyKey, c1.Token, "transient"); err != nil {
				t.Fatalf("fail: %v", err)
			}
			c2 := mustClaim(t, s, 50, store.Acquired)
			if c2.Attempt != 2 {
				t.Fatalf("claim after fail = %+v", c2)
			}
			// Not c1.Token: FailResetsToken reissues it after a failure,
			// which TestFailResetsTokenDecreases shows.
			if _, err := commitOne(s, c2.Token+1); !errors.Is(err, store.ErrStaleToken) {
				t.Fatalf("commit with a token never issued: err = %v, want stale", err)
			}
			clk.Advance(5)
			res, err := commitOne(s, c2.Token)
			if err != nil || res.Credited != 1 || res.AtMs != 1005 {
				t.Fatalf("commit = %+v, %v", res, err)
			}
			// A checkpoint: the lost-commit mutant writes its cache back here.
			if _, err := s.Records(ctx); err != nil {
				t.Fatal(err)
			}
			mustClaim(t, s, 50, store.AlreadyProcessed)
			if err := s.Fail(ctx, racyKey, c2.Token, "late"); !errors.Is(err, store.ErrNotHeld) {
				t.Fatalf("fail after commit: err = %v, want not held", err)
			}
			r, ok, err := s.Get(ctx, racyKey)
			if err != nil || !ok || r.State != store.Processed || r.Attempts != 2 || r.FinishedAtMs != 1005 {
				t.Fatalf("record = %+v, %v, %v", r, ok, err)
			}
			if l, _ := s.Ledger(ctx); len(l) != 1 {
				t.Fatalf("ledger = %+v, want one entry", l)
			}
		})
	}
}

// TestTakeoverKeepsTokenReusesToken shows the bug directly: the takeover is
// handed the expired holder's token, and the expired holder's commit lands.
func TestTakeoverKeepsTokenReusesToken(t *testing.T) {
	clk := clock.NewVirtual(0)
	s := NewTakeoverKeepsToken(clk)
	old := mustClaim(t, s, 10, store.Acquired)
	clk.Advance(10)
	c := mustClaim(t, s, 10, store.Acquired)
	if !c.Takeover || c.Token != old.Token {
		t.Fatalf("takeover = %+v, old token %d: expected the reused token", c, old.Token)
	}
	if _, err := commitOne(s, old.Token); err != nil {
		t.Fatalf("expired holder's commit: %v (the bug lets it land)", err)
	}
}

// TestFailResetsTokenDecreases shows the bug directly: after a takeover and a
// failure, the next claim is issued a token lower than one already issued,
// equal to the first holder's, whose late commit then lands.
func TestFailResetsTokenDecreases(t *testing.T) {
	ctx := context.Background()
	clk := clock.NewVirtual(0)
	s := NewFailResetsToken(clk)
	first := mustClaim(t, s, 10, store.Acquired)
	clk.Advance(10)
	second := mustClaim(t, s, 10, store.Acquired)
	if err := s.Fail(ctx, racyKey, second.Token, "transient"); err != nil {
		t.Fatal(err)
	}
	third := mustClaim(t, s, 10, store.Acquired)
	if third.Token >= second.Token || third.Token != first.Token {
		t.Fatalf("tokens %d, %d, %d: expected the third to fall back to the first", first.Token, second.Token, third.Token)
	}
	if _, err := commitOne(s, first.Token); err != nil {
		t.Fatalf("first holder's late commit: %v (the bug lets it land)", err)
	}
}

// TestCommitLostInWriteBackLosesCommit shows the bug directly: a commit reports success,
// a claim does not see it, takes the lease over after expiry, and the
// write-back drops the mark.
func TestCommitLostInWriteBackLosesCommit(t *testing.T) {
	ctx := context.Background()
	clk := clock.NewVirtual(0)
	s := NewCommitLostInWriteBack(clk)
	c := mustClaim(t, s, 10, store.Acquired)
	if _, err := commitOne(s, c.Token); err != nil {
		t.Fatalf("commit: %v", err)
	}
	mustClaim(t, s, 10, store.Locked)
	clk.Advance(10)
	took := mustClaim(t, s, 10, store.Acquired)
	if !took.Takeover || took.Attempt != 2 {
		t.Fatalf("claim after the lost commit = %+v", took)
	}
	recs, _ := s.Records(ctx)
	if len(recs) != 1 || recs[0].State != store.Processing {
		t.Fatalf("records after write-back = %+v, want the commit gone", recs)
	}
}
