package linearizability

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/idemcheck/idemcheck/impl/contract/store"
)

// errInjected is the failure the flaky store reports: neither a fencing
// answer nor a context error, like a connection reset.
var errInjected = errors.New("injected: connection reset")

// flakyStore wraps a correct store and fails some calls, before or after
// doing them, the way a database behind a flaky network does. It is
// linearizable, and the checker must say so whatever the errors hid.
type flakyStore struct {
	store.Store
	calls atomic.Int64
}

// fate decides what happens to the next call: 0 runs it, 1 fails it without
// running it, 2 runs it and reports a failure.
func (f *flakyStore) fate() int {
	switch f.calls.Add(1) % 11 {
	case 3:
		return 1
	case 7:
		return 2
	}
	return 0
}

func (f *flakyStore) Claim(ctx context.Context, key store.Key, leaseMs int64) (store.Claim, error) {
	fate := f.fate()
	if fate == 1 {
		return store.Claim{}, errInjected
	}
	c, err := f.Store.Claim(ctx, key, leaseMs)
	if fate == 2 {
		return store.Claim{}, errInjected
	}
	return c, err
}

func (f *flakyStore) Fail(ctx context.Context, key store.Key, token uint64, reason string) error {
	fate := f.fate()
	if fate == 1 {
		return errInjected
	}
	err := f.Store.Fail(ctx, key, token, reason)
	if fate == 2 {
		return errInjected
	}
	return err
}

func (f *flakyStore) Begin(ctx context.Context, key store.Key, token uint64) (store.Tx, error) {
	tx, err := f.Store.Begin(ctx, key, token)
	return &flakyTx{Tx: tx, f: f}, err
}

type flakyTx struct {
	store.Tx
	f *flakyStore
}

func (t *flakyTx) Commit(ctx context.Context) (store.CommitResult, error) {
	fate := t.f.fate()
	if fate == 1 {
		return store.CommitResult{}, errInjected
	}
	res, err := t.Tx.Commit(ctx)
	if fate == 2 {
		return store.CommitResult{}, errInjected
	}
	return res, err
}

// slowStore wraps a correct store and makes some claims and commits wait
// longer than the recorder's operation timeout before they go through,
// ignoring their context: the recorder gives up on them, and they land
// later, after other clients' operations. Wait waits for the stragglers.
type slowStore struct {
	store.Store
	delay time.Duration
	calls atomic.Int64
	wg    sync.WaitGroup
}

func (s *slowStore) stall() {
	if s.calls.Add(1)%29 == 5 {
		time.Sleep(s.delay)
	}
}

func (s *slowStore) Claim(ctx context.Context, key store.Key, leaseMs int64) (store.Claim, error) {
	s.wg.Add(1)
	defer s.wg.Done()
	s.stall()
	return s.Store.Claim(context.WithoutCancel(ctx), key, leaseMs)
}

func (s *slowStore) Begin(ctx context.Context, key store.Key, token uint64) (store.Tx, error) {
	tx, err := s.Store.Begin(ctx, key, token)
	return &slowTx{Tx: tx, s: s}, err
}

type slowTx struct {
	store.Tx
	s *slowStore
}

func (t *slowTx) Commit(ctx context.Context) (store.CommitResult, error) {
	t.s.wg.Add(1)
	defer t.s.wg.Done()
	t.s.stall()
	return t.Tx.Commit(context.WithoutCancel(ctx))
}
