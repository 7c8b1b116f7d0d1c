package procstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/idemcheck/idemcheck/impl/contract/store"
)

// Begin implements store.Store: the adapter opens a unit of work and names
// it. The unit lives in the adapter's memory and dies with its process.
func (s *Store) Begin(ctx context.Context, key store.Key, token uint64) (store.Tx, error) {
	r, err := s.call(ctx, OpBegin, anyGen, map[string]any{"key": key, "token": token})
	if err != nil {
		return nil, err
	}
	return &tx{s: s, key: key, id: *r.Tx, gen: r.gen}, nil
}

// tx is a unit of work held by the adapter process of generation gen.
type tx struct {
	s    *Store
	key  store.Key
	id   int64
	gen  int
	err  error // the first failed Credit, reported by Commit
	done bool
}

var _ store.Crasher = (*tx)(nil)

// Credit implements store.Tx. The contract's Credit cannot fail, so a
// failure to stage is kept and returned by Commit, which then lands nothing.
func (t *tx) Credit(e store.Entry) {
	if t.err != nil || t.done {
		return
	}
	if _, err := t.s.call(context.Background(), OpCredit, t.gen, map[string]any{"tx": t.id, "entry": e}); err != nil {
		t.err = fmt.Errorf("procstore: credit in the unit of work for %s: %w", t.key, err)
	}
}

// Commit implements store.Tx.
func (t *tx) Commit(ctx context.Context) (store.CommitResult, error) {
	if t.done {
		return store.CommitResult{}, fmt.Errorf("unit of work for %s already finished", t.key)
	}
	t.done = true
	if t.err != nil {
		t.rollback(ctx)
		return store.CommitResult{}, t.err
	}
	r, err := t.s.call(ctx, OpCommit, t.gen, map[string]any{"tx": t.id})
	if err != nil {
		return store.CommitResult{}, err
	}
	return *r.Commit, nil
}

// Rollback implements store.Tx. Safe after Commit, and after the process
// died (the unit died with it).
func (t *tx) Rollback(ctx context.Context) error {
	if t.done {
		return nil
	}
	t.done = true
	return t.rollback(ctx)
}

func (t *tx) rollback(ctx context.Context) error {
	_, err := t.s.call(ctx, OpRollback, t.gen, map[string]any{"tx": t.id})
	if errors.Is(err, errLost) {
		return nil
	}
	return err
}

// Crash implements store.Crasher: the worker dies mid-transaction, and with
// it the store process (if it is still the one the unit began in). Every
// unit of work open in that process is lost.
func (t *tx) Crash() {
	t.done = true
	t.s.mu.Lock()
	defer t.s.mu.Unlock()
	if t.gen == t.s.gen {
		t.s.killLocked()
	}
}
