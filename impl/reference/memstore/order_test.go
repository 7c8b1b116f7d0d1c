package memstore

import (
	"context"
	"maps"
	"slices"
	"testing"

	"pgregory.net/rapid"

	"github.com/idemcheck/idemcheck/impl/contract/clock"
	"github.com/idemcheck/idemcheck/impl/contract/store"
	"github.com/idemcheck/idemcheck/internal/hunt"
)

// Records and Ledger remember their order between calls: whatever the
// store went through (claims, commits, failures, cleanups, copies), they
// return what sorting the tables afresh returns.
func TestRememberedOrderIsTheTablesOrder(t *testing.T) {
	hunt.Check(t, func(t *rapid.T) {
		ctx := context.Background()
		truth := clock.NewVirtual(1_000)
		s, err := NewWithConventions(truth, store.Conventions{FailedAttempt: rapid.SampledFrom([]store.FailedAttempt{"", store.FailedAttemptDeleted}).Draw(t, "failed")})
		if err != nil {
			t.Fatal(err)
		}
		keys := []store.Key{{Consumer: "a", ID: "1"}, {Consumer: "a", ID: "2"}, {Tenant: "t", Consumer: "b", ID: "1"}, {Consumer: "b", ID: "0"}}
		tokens := map[store.Key]uint64{}
		for range rapid.IntRange(1, 40).Draw(t, "ops") {
			k := rapid.SampledFrom(keys).Draw(t, "key")
			switch rapid.IntRange(0, 5).Draw(t, "op") {
			case 0, 1:
				c, _ := s.Claim(ctx, k, 100)
				tokens[k] = c.Token
			case 2:
				if tx, err := s.Begin(ctx, k, tokens[k]); err == nil {
					tx.Credit(store.Entry{Consumer: k.Consumer, EventID: k.ID})
					_, _ = tx.Commit(ctx)
				}
			case 3:
				_ = s.Fail(ctx, k, tokens[k], "boom")
			case 4:
				truth.Advance(rapid.Int64Range(0, 500).Draw(t, "ms"))
				_, _ = s.Cleanup(ctx, 200)
			case 5:
				s = s.Clone(truth)
			}
			recs, _ := s.Records(ctx)
			led, _ := s.Ledger(ctx)
			var wantRecs []store.Record
			for _, r := range s.records {
				wantRecs = append(wantRecs, *r)
			}
			slices.SortFunc(wantRecs, func(a, b store.Record) int { return compareKeys(a.Key, b.Key) })
			wantLed := slices.SortedFunc(maps.Values(s.ledger), CompareEntries)
			if !slices.Equal(recs, wantRecs) || !slices.Equal(led, wantLed) {
				t.Fatalf("records %v, ledger %v; sorted afresh: %v, %v", recs, led, wantRecs, wantLed)
			}
		}
	})
}
