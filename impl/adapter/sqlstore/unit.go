package sqlstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/idemcheck/idemcheck/impl/contract/store"
)

// Begin implements store.Store: it pins a connection and opens the unit's
// transaction, reading and locking nothing (see BeginUnit).
func (s *Store) Begin(ctx context.Context, key store.Key, token uint64) (store.Tx, error) {
	c, err := s.be.Acquire(ctx)
	if err != nil {
		return nil, fmt.Errorf("%s: begin %s: %w", s.d.Name, key, err)
	}
	if _, err := c.Exec(ctx, s.d.BeginUnit); err != nil {
		c.Crash()
		return nil, fmt.Errorf("%s: begin %s: %w", s.d.Name, key, err)
	}
	return &unit{s: s, key: key, token: token, c: c}, nil
}

// unit is a unit of work: a transaction open on its own connection, with
// the ledger entries staged in memory until Commit. Like the worker it
// belongs to, it is used by one goroutine at a time.
type unit struct {
	s      *Store
	key    store.Key
	token  uint64
	staged []store.Entry
	// c is the pinned connection; nil once the unit is finished.
	c       Conn
	crashed bool
}

var (
	_ store.Tx      = (*unit)(nil)
	_ store.Crasher = (*unit)(nil)
)

// errCrashed is what a unit answers after Crash.
var errCrashed = errors.New("unit of work crashed")

// Credit implements store.Tx.
func (u *unit) Credit(e store.Entry) { u.staged = append(u.staged, e) }

// Rollback implements store.Tx. A rollback the database refuses closes the
// connection instead, which discards the work just the same, so Rollback
// reports no error.
func (u *unit) Rollback(context.Context) error {
	if u.c != nil {
		u.s.abort(u.c)
		u.c = nil
	}
	u.staged = nil
	return nil
}

// Crash implements store.Crasher: the connection is closed under the open
// transaction, and the database rolls the transaction back as it does for
// a client that died.
func (u *unit) Crash() {
	if u.c != nil {
		u.c.Crash()
		u.c = nil
		u.crashed = true
	}
	u.staged = nil
}

// Commit implements store.Tx.
func (u *unit) Commit(ctx context.Context) (store.CommitResult, error) {
	if u.c == nil {
		if u.crashed {
			return store.CommitResult{}, fmt.Errorf("%s: commit %s: %w", u.s.d.Name, u.key, errCrashed)
		}
		return store.CommitResult{}, fmt.Errorf("%s: commit %s: unit of work already finished", u.s.d.Name, u.key)
	}
	res, err := u.commit(ctx, commitHook(ctx))
	if err != nil {
		if u.c != nil {
			u.s.abort(u.c)
		}
		u.c = nil
		return store.CommitResult{}, fmt.Errorf("%s: commit %s: %w", u.s.d.Name, u.key, err)
	}
	u.c.Release()
	u.c = nil
	return res, nil
}

// commit is the transaction's body: the fencing check first, on the locked
// row, so that a stale unit lands nothing; then the effects and the mark.
func (u *unit) commit(ctx context.Context, hook func(CommitPoint)) (store.CommitResult, error) {
	s, c := u.s, u.c
	// at runs the hook and stops if it crashed the unit.
	at := func(p CommitPoint) error {
		if hook != nil {
			hook(p)
		}
		if u.c == nil {
			return errCrashed
		}
		return nil
	}
	if err := s.checkHeld(ctx, c, u.key, u.token); err != nil {
		return store.CommitResult{}, err
	}
	if err := at(AfterFencingCheck); err != nil {
		return store.CommitResult{}, err
	}
	now, err := s.nowOn(ctx, c)
	if err != nil {
		return store.CommitResult{}, err
	}
	res := store.CommitResult{AtMs: now}
	for _, e := range u.staged {
		n, err := c.Exec(ctx, s.q.insertEntry, e.Consumer, e.EventID, e.OrderID, e.UserID, e.AmountCents)
		if err != nil {
			return store.CommitResult{}, fmt.Errorf("insert ledger entry %s/%s: %w", e.Consumer, e.EventID, err)
		}
		if n == 1 {
			res.Credited++
		} else {
			res.DuplicatesIgnored++
		}
	}
	if err := at(AfterLedgerInsert); err != nil {
		return store.CommitResult{}, err
	}
	n, err := c.Exec(ctx, s.q.mark, u.key.Tenant, u.key.Consumer, u.key.ID, now, int64(u.token))
	if err != nil {
		return store.CommitResult{}, fmt.Errorf("mark processed: %w", err)
	}
	if n != 1 {
		return store.CommitResult{}, fmt.Errorf("mark processed updated %d rows", n)
	}
	if err := at(AfterMark); err != nil {
		return store.CommitResult{}, err
	}
	if err := c.Commit(ctx); err != nil {
		return store.CommitResult{}, err
	}
	return res, nil
}
