package conformance_test

import (
	"context"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/impl/contract/clock"
	"github.com/idemcheck/idemcheck/impl/contract/store"
	"github.com/idemcheck/idemcheck/linearizability"
)

// benchRecord records a concurrent history of 10,000 operations from 8
// clients against the target's store under the linearizability recorder, and
// checks it. It reports the store's operations and settles (claims answered
// plus commits and fails) per second under the recorder, and the time the
// check of the history took.
func benchRecord(b *testing.B, spec string) {
	tg := openTarget(b, spec)
	newStore := func(c clock.Source) store.Store {
		s, err := tg.Consumption.NewStore(c)
		if err != nil {
			b.Fatal(err)
		}
		return s
	}
	cfg := linearizability.DefaultConfig()
	cfg.Clients, cfg.Ops = 8, 10_000
	var recordDur, checkDur time.Duration
	var ops, settles int
	for i := 0; i < b.N; i++ {
		cfg.Seed = uint64(i + 1)
		start := time.Now()
		h, err := linearizability.Record(context.Background(), newStore, cfg)
		if err != nil {
			b.Fatal(err)
		}
		recordDur += time.Since(start)
		st := h.Stats()
		ops += st.Ops
		settles += st.Acquired + st.Locked + st.Done + st.Commits + st.Fails + st.Stale + st.NotHeld
		start = time.Now()
		res := linearizability.Check(h, time.Minute)
		checkDur += time.Since(start)
		if !res.Pass() {
			b.Fatalf("%s: %s", spec, res)
		}
	}
	b.ReportMetric(float64(ops)/recordDur.Seconds(), "ops/s")
	b.ReportMetric(float64(settles)/recordDur.Seconds(), "claims+settles/s")
	b.ReportMetric(float64(checkDur.Milliseconds())/float64(b.N), "check-ms/history")
}

func BenchmarkRecorderSQLite(b *testing.B) { benchRecord(b, "sqlite") }

func BenchmarkRecorderPostgres(b *testing.B) {
	postgresDSN(b)
	benchRecord(b, "postgres")
}
