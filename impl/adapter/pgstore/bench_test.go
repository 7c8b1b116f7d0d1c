package pgstore_test

import (
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/idemcheck/idemcheck/impl/contract/store"
)

// BenchmarkSettle measures whole consumptions per second — claim, begin,
// credit, commit — on distinct keys, from 4×GOMAXPROCS goroutines, with
// PostgreSQL's clock as the store's time (no Clock), as in production.
func BenchmarkSettle(b *testing.B) {
	s := open(b, nil)
	var next atomic.Int64
	b.SetParallelism(4)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		ctx := b.Context()
		for pb.Next() {
			id := fmt.Sprint("e", next.Add(1))
			k := store.Key{Tenant: "bench", Consumer: "ledger", ID: id}
			c, err := s.Claim(ctx, k, 30_000)
			if err != nil || c.Outcome != store.Acquired {
				b.Errorf("Claim = %+v, %v", c, err)
				return
			}
			tx, err := s.Begin(ctx, k, c.Token)
			if err != nil {
				b.Error(err)
				return
			}
			tx.Credit(store.Entry{Consumer: "ledger", EventID: id, OrderID: "o", UserID: "u", AmountCents: 1})
			if _, err := tx.Commit(ctx); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "settles/s")
}
