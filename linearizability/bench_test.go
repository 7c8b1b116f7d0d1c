package linearizability

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/impl/contract/clock"
	"github.com/idemcheck/idemcheck/impl/contract/store"
	"github.com/idemcheck/idemcheck/impl/reference/memstore"
)

func newReference(c clock.Source) store.Store { return memstore.New(c) }

// benchHistory records, once per configuration, a real history from the
// reference store: real concurrency makes a realistic mix of overlaps, which
// a synthetic generator would have to imitate.
var benchHistories sync.Map

func benchHistory(b *testing.B, name string, cfg Config) History {
	b.Helper()
	if h, ok := benchHistories.Load(name); ok {
		return h.(History)
	}
	h, err := Record(context.Background(), newReference, cfg)
	if err != nil {
		b.Fatal(err)
	}
	benchHistories.Store(name, h)
	return h
}

func benchCheck(b *testing.B, h History, timeout time.Duration) {
	st := h.Stats()
	b.Logf("history: %+v", st)
	var r Result
	for b.Loop() {
		r = Check(h, timeout)
		if r.Verdict == Violation {
			b.Fatalf("reference flagged: %s\n%v", r, r.Explanations)
		}
	}
	if r.Verdict == Unknown {
		b.Logf("verdict: %s (within the %v timeout)", r, timeout)
		b.ReportMetric(1, "unknown")
	}
	b.ReportMetric(float64(st.Ops), "ops")
	b.ReportMetric(float64(st.Keys), "keys")
}

// BenchmarkCheck100kOps1kKeys checks 100,000 operations over 1,000 keys from
// 8 clients. Goal: under 2 s on 2 cores.
func BenchmarkCheck100kOps1kKeys(b *testing.B) {
	cfg := DefaultConfig()
	cfg.Ops, cfg.Keys = 100_000, 1_000
	benchCheck(b, benchHistory(b, "100k", cfg), time.Minute)
}

// BenchmarkCheckHotKey10kOps8Clients checks 10,000 operations on one key from
// 8 clients, claims settled by fail so that the key stays contended for the
// whole run. It must end in a verdict, or in Unknown within its timeout.
func BenchmarkCheckHotKey10kOps8Clients(b *testing.B) {
	cfg := DefaultConfig()
	cfg.Ops, cfg.Keys, cfg.ActiveKeys, cfg.CommitPercent = 10_000, 1, 1, 0
	benchCheck(b, benchHistory(b, "hot", cfg), time.Minute)
}
