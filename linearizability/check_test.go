package linearizability

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/impl/contract/clock"
	"github.com/idemcheck/idemcheck/impl/contract/store"
	"github.com/idemcheck/idemcheck/impl/reference/memstore"
)

func record(t *testing.T, newStore func(clock.Source) store.Store, cfg Config) History {
	t.Helper()
	h, err := Record(context.Background(), newStore, cfg)
	if err != nil {
		t.Fatalf("record: %v", err)
	}
	if len(h.Ops) != cfg.Ops {
		t.Fatalf("recorded %d operations, want %d", len(h.Ops), cfg.Ops)
	}
	return h
}

func testConfig(seed uint64) Config {
	cfg := DefaultConfig()
	cfg.Ops, cfg.Keys, cfg.Seed = testOps, testOps/opsPerKey, seed
	return cfg
}

// requireExercised fails unless the history met what makes it a test of the
// claim store and not of an idle one: contention, takeovers, fencing
// rejections, commits and duplicates of processed keys.
func requireExercised(t *testing.T, st Stats) {
	t.Helper()
	if st.Clients < DefaultClients || st.Takeovers == 0 || st.Locked == 0 || st.Stale == 0 ||
		st.NotHeld == 0 || st.Commits == 0 || st.Fails == 0 || st.Done == 0 || st.Reads == 0 {
		t.Fatalf("history too tame to prove anything: %+v", st)
	}
}

// TestReferenceLinearizable records the reference store from 8 clients
// (10,000 operations, fewer under the race detector) with several seeds.
// It must never be flagged, and Unknown is not a pass.
func TestReferenceLinearizable(t *testing.T) {
	for seed := uint64(1); seed <= 3; seed++ {
		h := record(t, newReference, testConfig(seed))
		st := h.Stats()
		requireExercised(t, st)
		if st.Ambiguous != 0 {
			t.Fatalf("the reference answered every call, yet %d were recorded ambiguous", st.Ambiguous)
		}
		r := Check(h, time.Minute)
		if r.Verdict != Linearizable {
			t.Fatalf("seed %d: %s\n%s", seed, r, strings.Join(r.Explanations, "\n"))
		}
		t.Logf("seed %d: %s in %v; %+v", seed, r, r.Elapsed, st)
	}
}

// TestAmbiguousOutcomesAccepted records a store that fails calls before or
// after doing them. Each failure is recorded as ambiguous, and the history
// is still linearizable.
func TestAmbiguousOutcomesAccepted(t *testing.T) {
	h := record(t, func(c clock.Source) store.Store { return &flakyStore{Store: memstore.New(c)} }, testConfig(7))
	st := h.Stats()
	if st.Ambiguous < st.Ops/20 {
		t.Fatalf("only %d of %d operations ambiguous", st.Ambiguous, st.Ops)
	}
	if st.Clients <= DefaultClients {
		t.Fatalf("workers did not continue as new clients after ambiguous calls: %+v", st)
	}
	for _, op := range h.Ops {
		if op.Output.Ambiguous && (op.Return != Never || op.Output.Err != errInjected.Error()) {
			t.Fatalf("ambiguous operation recorded as %+v", op)
		}
	}
	if r := Check(h, time.Minute); r.Verdict != Linearizable {
		t.Fatalf("%s\n%s", r, strings.Join(r.Explanations, "\n"))
	}
}

// TestAbandonedCallsLandLate records a store some of whose calls outlive the
// operation timeout and then go through: the recorder gives up on them
// (ambiguous, never returned), they take effect later, and the history is
// still linearizable.
func TestAbandonedCallsLandLate(t *testing.T) {
	var slow *slowStore
	cfg := testConfig(11)
	cfg.Ops, cfg.Keys = 2_000, 100
	cfg.OpTimeout = 5 * time.Millisecond
	h := record(t, func(c clock.Source) store.Store {
		slow = &slowStore{Store: memstore.New(c), delay: 20 * time.Millisecond}
		return slow
	}, cfg)
	slow.wg.Wait()
	st := h.Stats()
	if st.Ambiguous == 0 {
		t.Fatalf("no call was abandoned: %+v", st)
	}
	for _, op := range h.Ops {
		if op.Output.Ambiguous && !strings.Contains(op.Output.Err, "deadline") {
			t.Fatalf("abandoned operation recorded as %+v", op)
		}
	}
	if r := Check(h, time.Minute); r.Verdict != Linearizable {
		t.Fatalf("%s\n%s", r, strings.Join(r.Explanations, "\n"))
	}
}

// pathological is a history porcupine cannot decide quickly: n reads, all
// concurrent with each other and with one claim whose answer no order
// allows. Every subset of the reads is a distinct search state, so proving
// the violation takes 2^n steps.
func pathological(n int) History {
	ops := []Op{claimOp(0, 1, int64(2*n+2), 10, locked(100))}
	for i := range n {
		ops = append(ops, readOp(1+i, int64(2+i), int64(2+n+i), nil))
	}
	return History{Ops: ops}
}

// TestUnknownIsNotAPass checks that a timeout is reported as Unknown, with
// the undecided key, and never as a pass.
func TestUnknownIsNotAPass(t *testing.T) {
	timeout := 200 * time.Millisecond
	r := Check(pathological(60), timeout)
	if r.Verdict != Unknown || r.Pass() {
		t.Fatalf("verdict %s, pass %v: want unknown, not a pass", r.Verdict, r.Pass())
	}
	if len(r.Undecided) != 1 || r.Undecided[0] != k1 || !strings.Contains(r.String(), "not a pass") {
		t.Fatalf("result %+v", r)
	}
	if r.Elapsed > timeout+5*time.Second {
		t.Fatalf("the check overran its timeout: %v", r.Elapsed)
	}
	// The same shape, small enough to search, is a violation: the timeout
	// above is what made it Unknown.
	if r := Check(pathological(6), time.Minute); r.Verdict != Violation {
		t.Fatalf("small pathological history: %s", r)
	}
}

// TestCheckStoreReference is the one-call entry point on the reference.
func TestCheckStoreReference(t *testing.T) {
	r := CheckStore(t, newReference, WithOps(testOps), WithSeed(5))
	if r.Verdict != Linearizable || r.Ops != testOps {
		t.Fatalf("%+v", r)
	}
}

func TestConfigValidation(t *testing.T) {
	bad := []Option{
		WithClients(0), WithOps(0), WithKeys(0, 1), WithOpTimeout(0), WithCheckTimeout(-1),
		func(c *Config) { c.MinLeaseMs, c.MaxLeaseMs = 5, 4 },
		func(c *Config) { c.CommitPercent = 101 },
		func(c *Config) { c.MaxStepMs = -1 },
	}
	for i, o := range bad {
		cfg := DefaultConfig()
		o(&cfg)
		if _, err := Record(context.Background(), newReference, cfg); err == nil {
			t.Errorf("option %d: invalid config accepted: %+v", i, cfg)
		}
	}
}

// TestHotKeyDecided checks a hot key (every operation on one key, from 8
// clients, kept contended by settling with fail) to a verdict well within
// the timeout: the checker's search must stay near linear when all clients
// overlap on one key.
func TestHotKeyDecided(t *testing.T) {
	cfg := testConfig(9)
	cfg.Keys, cfg.ActiveKeys, cfg.CommitPercent = 1, 1, 0
	h := record(t, newReference, cfg)
	if st := h.Stats(); st.Keys != 1 || st.Takeovers == 0 || st.Stale == 0 {
		t.Fatalf("not a contended hot key: %+v", st)
	}
	if r := Check(h, 30*time.Second); r.Verdict != Linearizable {
		t.Fatalf("%s\n%s", r, strings.Join(r.Explanations, "\n"))
	}
}
