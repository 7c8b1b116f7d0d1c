package redisstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/idemcheck/idemcheck/impl/contract/store"
)

// Begin implements store.Store. Nothing is read or locked: the token is
// checked when the effect is written.
func (s *Store) Begin(_ context.Context, key store.Key, token uint64) (store.Tx, error) {
	return &tx{s: s, key: key, token: token}, nil
}

// tx is the pattern's unit of work: entries staged in the worker's memory,
// then an effect write and a mark write.
type tx struct {
	s       *Store
	key     store.Key
	token   uint64
	staged  []store.Entry
	done    bool // Commit, CommitMark or Rollback ended it
	applied bool // CommitEffect wrote the effect
}

var _ store.SplitTx = (*tx)(nil)

// Credit implements store.Tx.
func (t *tx) Credit(e store.Entry) { t.staged = append(t.staged, e) }

// Rollback implements store.Tx. An effect already written stays written:
// there is no transaction to roll back.
func (t *tx) Rollback(context.Context) error {
	t.staged, t.done = nil, true
	return nil
}

// Commit implements store.Tx the only way the pattern can: effect, then mark.
func (t *tx) Commit(ctx context.Context) (store.CommitResult, error) {
	res, err := t.CommitEffect(ctx)
	if err != nil {
		return res, err
	}
	return res, t.CommitMark(ctx)
}

// CommitEffect implements store.SplitTx: GET the record and compare the
// token, then HSETNX each staged entry into the ledger.
func (t *tx) CommitEffect(ctx context.Context) (store.CommitResult, error) {
	if t.done || t.applied {
		return store.CommitResult{}, fmt.Errorf("unit of work for %s already committed its effect", t.key)
	}
	t.applied = true
	s := t.s
	r, ok, err := s.readRecord(ctx, s.rdb, t.key)
	if err != nil {
		return store.CommitResult{}, err
	}
	if err := checkHeld(r, ok, t.key, t.token); err != nil {
		t.done = true
		return store.CommitResult{}, err
	}
	res := store.CommitResult{AtMs: s.clock.NowMs()}
	for _, e := range t.staged {
		inserted, err := s.rdb.HSetNX(ctx, s.ledger, entryField(e), encode(e)).Result()
		if err != nil {
			return res, fmt.Errorf("redisstore: write effect of %s: %w", t.key, err)
		}
		if inserted {
			res.Credited++
		} else {
			res.DuplicatesIgnored++
		}
	}
	return res, nil
}

// CommitMark implements store.SplitTx: GET the record and compare the token
// again, then write it processed.
func (t *tx) CommitMark(ctx context.Context) error {
	switch {
	case t.done:
		return fmt.Errorf("unit of work for %s already finished", t.key)
	case !t.applied:
		return errors.New("redisstore: CommitMark before CommitEffect")
	}
	t.done = true
	s := t.s
	r, ok, err := s.readRecord(ctx, s.rdb, t.key)
	if err != nil {
		return err
	}
	if err := checkHeld(r, ok, t.key, t.token); err != nil {
		return err
	}
	now := s.clock.NowMs()
	r.State, r.FinishedAtMs, r.LeaseUntilMs, r.LastError = store.Processed, now, 0, ""
	if err := s.rdb.HSet(ctx, s.records, recordField(t.key), encode(r)).Err(); err != nil {
		return fmt.Errorf("redisstore: mark %s processed: %w", t.key, err)
	}
	return nil
}
