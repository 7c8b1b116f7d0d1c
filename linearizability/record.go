package linearizability

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/idemcheck/idemcheck/impl/contract/clock"
	"github.com/idemcheck/idemcheck/impl/contract/store"
)

// startMs is the virtual clock's reading when a recording starts.
const startMs = 1_000_000

// Record builds a store with newStore over a fresh shared virtual clock and
// drives it from cfg.Clients goroutines until cfg.Ops operations have been
// issued, recording each. The store is closed afterwards if it is a
// store.Closer.
//
// Each operation's call and return are stamped from one atomic counter, so a
// return stamped before a call is a real-time order the check must respect.
// An operation that errs (except with a fencing answer) or outlives
// cfg.OpTimeout is recorded as ambiguous, with Return Never; its client is
// not waited for, and the worker continues as a new client.
func Record(ctx context.Context, newStore func(clock.Source) store.Store, cfg Config) (History, error) {
	if err := cfg.validate(); err != nil {
		return History{}, err
	}
	clk := clock.NewVirtual(startMs)
	s := newStore(clk)
	r := &recorder{cfg: cfg, store: s, clock: clk}
	r.nextClient.Store(int64(cfg.Clients))
	logs := make([][]Op, cfg.Clients)
	var wg sync.WaitGroup
	for i := range cfg.Clients {
		wg.Go(func() {
			w := &worker{
				r:      r,
				client: i,
				rng:    rand.New(rand.NewPCG(cfg.Seed, uint64(i))),
				held:   map[int]uint64{},
				past:   map[int]uint64{},
			}
			w.run(ctx)
			logs[i] = w.log
		})
	}
	wg.Wait()
	if c, ok := s.(store.Closer); ok {
		if err := c.Close(); err != nil {
			return History{}, fmt.Errorf("linearizability: closing the store: %w", err)
		}
	}
	ops := slices.Concat(logs...)
	slices.SortFunc(ops, func(a, b Op) int { return compareInt64(a.Call, b.Call) })
	return History{Ops: ops, Seed: cfg.Seed, Conventions: cfg.Conventions}, ctx.Err()
}

func compareInt64(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// recorder is what the workers of one recording share.
type recorder struct {
	cfg   Config
	store store.Store
	clock *clock.Virtual
	// issued counts operations handed out; stamps is the monotonic source of
	// call and return stamps; nextClient numbers the clients that replace
	// workers after an ambiguous operation.
	issued, stamps, nextClient atomic.Int64
}

// worker is one goroutine of a recording. Its choices come from its own
// seeded generator, so the same seed issues the same kinds of operations,
// whatever the interleaving makes of them.
type worker struct {
	r      *recorder
	client int
	rng    *rand.Rand
	// held maps a key index to the token of a claim this worker acquired
	// and has not settled; past to the last token it settled or gave up,
	// which it sometimes replays to probe fencing.
	held, past map[int]uint64
	log        []Op
}

func (w *worker) run(ctx context.Context) {
	cfg := w.r.cfg
	for ctx.Err() == nil {
		n := w.r.issued.Add(1) - 1
		if n >= int64(cfg.Ops) {
			return
		}
		w.r.clock.Advance(w.rng.Int64N(cfg.MaxStepMs + 1))
		k := w.pickKey(n)
		in := w.choose(k)
		op := w.invoke(ctx, in)
		w.learn(k, in, op.Output)
		w.log = append(w.log, op)
		// Without a yield, a worker and its call's goroutine hand the
		// processor back and forth for a whole time slice, and the history
		// degenerates into long solo runs of one client with little overlap.
		runtime.Gosched()
	}
}

// pickKey picks a key index from the window of active keys at operation n.
func (w *worker) pickKey(n int64) int {
	cfg := w.r.cfg
	base := int(n * int64(cfg.Keys) / int64(cfg.Ops))
	return (base + w.rng.IntN(cfg.ActiveKeys)) % cfg.Keys
}

// keyOf names key index k. Tenants and consumers alternate so that the same
// event id under two consumers, and the empty tenant, are distinct keys.
func keyOf(k int) store.Key {
	return store.Key{
		Tenant:   [...]string{"", "acme"}[k%2],
		Consumer: [...]string{"ledger", "email"}[k/2%2],
		ID:       fmt.Sprintf("evt-%d", k/4),
	}
}

// choose draws the next operation on key index k: settle a held claim
// (commit or fail), or claim, read, or replay an old token.
func (w *worker) choose(k int) Input {
	cfg := w.r.cfg
	key := keyOf(k)
	if tok, ok := w.held[k]; ok {
		if w.rng.IntN(100) < cfg.CommitPercent {
			return Input{Kind: Commit, Key: key, Token: tok, Credit: true}
		}
		return Input{Kind: Fail, Key: key, Token: tok}
	}
	roll := w.rng.IntN(100)
	tok, hasPast := w.past[k]
	switch {
	case roll < 15:
		return Input{Kind: Read, Key: key}
	case roll < 25 && hasPast:
		if roll < 20 {
			return Input{Kind: Commit, Key: key, Token: tok, Credit: true}
		}
		return Input{Kind: Fail, Key: key, Token: tok}
	}
	lease := cfg.MinLeaseMs + w.rng.Int64N(cfg.MaxLeaseMs-cfg.MinLeaseMs+1)
	return Input{Kind: Claim, Key: key, LeaseMs: lease}
}

// learn updates what the worker holds after an operation on key index k.
func (w *worker) learn(k int, in Input, out Output) {
	switch in.Kind {
	case Claim:
		if !out.Ambiguous && out.Claim.Outcome == store.Acquired {
			w.held[k] = out.Claim.Token
		}
	case Commit, Fail:
		if w.held[k] == in.Token {
			delete(w.held, k)
		}
		w.past[k] = in.Token
	}
}

// invoke runs one operation against the store and records it. The call runs
// on its own goroutine so that a store that ignores its context cannot stall
// the recording: after cfg.OpTimeout the worker records the operation as
// ambiguous and moves on as a new client, and the call, if it ever
// completes, may still take effect — which is what Never means.
func (w *worker) invoke(ctx context.Context, in Input) Op {
	opCtx, cancel := context.WithTimeout(ctx, w.r.cfg.OpTimeout)
	defer cancel()
	done := make(chan Output, 1)
	op := Op{Client: w.client, Input: in}
	op.Call = w.r.stamps.Add(1)
	go func() { done <- apply(opCtx, w.r.store, in) }()
	select {
	case op.Output = <-done:
	case <-opCtx.Done():
		op.Output = Output{Ambiguous: true, Err: opCtx.Err().Error()}
	}
	if op.Output.Ambiguous {
		op.Return = Never
		w.client = int(w.r.nextClient.Add(1) - 1)
		return op
	}
	op.Return = w.r.stamps.Add(1)
	return op
}

// apply performs in against s. Any error but a fencing answer leaves the
// outcome unknown: the store may have applied the operation and failed to
// say so.
func apply(ctx context.Context, s store.Store, in Input) Output {
	ambiguous := func(err error) Output { return Output{Ambiguous: true, Err: err.Error()} }
	switch in.Kind {
	case Claim:
		c, err := s.Claim(ctx, in.Key, in.LeaseMs)
		if err != nil {
			return ambiguous(err)
		}
		return Output{Claim: c}
	case Commit:
		tx, err := s.Begin(ctx, in.Key, in.Token)
		if err != nil {
			return ambiguous(err)
		}
		if in.Credit {
			tx.Credit(creditFor(in.Key))
		}
		res, err := tx.Commit(ctx)
		if err != nil {
			return settleAnswer(err)
		}
		return Output{Answer: OK, Commit: res}
	case Fail:
		if err := s.Fail(ctx, in.Key, in.Token, "transient"); err != nil {
			return settleAnswer(err)
		}
		return Output{Answer: OK}
	case Read:
		r, found, err := s.Get(ctx, in.Key)
		if err != nil {
			return ambiguous(err)
		}
		return Output{Found: found, Record: r}
	}
	return ambiguous(fmt.Errorf("unknown operation %v", in.Kind))
}

// settleAnswer classifies a commit's or fail's error.
func settleAnswer(err error) Output {
	switch {
	case errors.Is(err, store.ErrStaleToken):
		return Output{Answer: Stale}
	case errors.Is(err, store.ErrNotHeld):
		return Output{Answer: NotHeld}
	}
	return Output{Ambiguous: true, Err: err.Error()}
}

// creditFor is the ledger entry of key's event. The event id carries the
// tenant because the ledger is unique on (consumer, event id) only, and two
// tenants' events must not collide across keys the check treats apart.
func creditFor(k store.Key) store.Entry {
	return store.Entry{Consumer: k.Consumer, EventID: k.Tenant + "/" + k.ID, OrderID: "order-" + k.ID, UserID: "user-1", AmountCents: 100}
}
