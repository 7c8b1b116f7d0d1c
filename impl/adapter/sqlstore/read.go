package sqlstore

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/idemcheck/idemcheck/impl/contract/store"
)

// withConn runs fn on a pooled connection outside any transaction.
func (s *Store) withConn(ctx context.Context, fn func(c Conn) error) error {
	c, err := s.be.Acquire(ctx)
	if err != nil {
		return err
	}
	defer c.Release()
	return fn(c)
}

// scanRecord reads a row of recordColumns.
func scanRecord(sc Scanner) (store.Record, error) {
	var r store.Record
	var token int64
	err := sc.Scan(&r.Key.Tenant, &r.Key.Consumer, &r.Key.ID, &r.State, &r.StartedAtMs, &r.FinishedAtMs,
		&r.Attempts, &token, &r.LeaseUntilMs, &r.LastError)
	r.Token = uint64(token)
	return r, err
}

// Get implements store.Store.
func (s *Store) Get(ctx context.Context, key store.Key) (store.Record, bool, error) {
	var r store.Record
	found := false
	err := s.withConn(ctx, func(c Conn) error {
		return c.Query(ctx, s.q.get, keyArgs(key), func(sc Scanner) error {
			var err error
			r, err = scanRecord(sc)
			found = true
			return err
		})
	})
	if err != nil {
		return store.Record{}, false, fmt.Errorf("%s: get %s: %w", s.d.Name, key, err)
	}
	return r, found, nil
}

// Records implements store.Store. Sorting happens here, not in SQL: a
// database collation may not compare bytes the way Go strings do.
func (s *Store) Records(ctx context.Context) ([]store.Record, error) {
	var out []store.Record
	err := s.withConn(ctx, func(c Conn) error {
		return c.Query(ctx, s.q.records, nil, func(sc Scanner) error {
			r, err := scanRecord(sc)
			out = append(out, r)
			return err
		})
	})
	if err != nil {
		return nil, fmt.Errorf("%s: records: %w", s.d.Name, err)
	}
	slices.SortFunc(out, func(a, b store.Record) int { return compareKeys(a.Key, b.Key) })
	return out, nil
}

// Ledger implements store.Store, sorted in Go for the reason Records is.
func (s *Store) Ledger(ctx context.Context) ([]store.Entry, error) {
	var out []store.Entry
	err := s.withConn(ctx, func(c Conn) error {
		return c.Query(ctx, s.q.ledger, nil, func(sc Scanner) error {
			var e store.Entry
			err := sc.Scan(&e.Consumer, &e.EventID, &e.OrderID, &e.UserID, &e.AmountCents)
			out = append(out, e)
			return err
		})
	})
	if err != nil {
		return nil, fmt.Errorf("%s: ledger: %w", s.d.Name, err)
	}
	slices.SortFunc(out, func(a, b store.Entry) int {
		return cmp.Or(strings.Compare(a.Consumer, b.Consumer), strings.Compare(a.EventID, b.EventID))
	})
	return out, nil
}

// Cleanup implements store.Store. The cutoff is the store's time minus the
// retention, computed here, so a worker's skewed clock cannot move it.
func (s *Store) Cleanup(ctx context.Context, retentionMs int64) ([]store.Key, error) {
	var out []store.Key
	err := s.withConn(ctx, func(c Conn) error {
		now, err := s.nowOn(ctx, c)
		if err != nil {
			return err
		}
		return c.Query(ctx, s.q.cleanup, []any{now - retentionMs}, func(sc Scanner) error {
			var k store.Key
			err := sc.Scan(&k.Tenant, &k.Consumer, &k.ID)
			out = append(out, k)
			return err
		})
	})
	if err != nil {
		return nil, fmt.Errorf("%s: cleanup: %w", s.d.Name, err)
	}
	slices.SortFunc(out, compareKeys)
	return out, nil
}

// NowMs implements store.Store.
func (s *Store) NowMs(ctx context.Context) (int64, error) {
	if s.clock != nil {
		return s.clock.NowMs(), nil
	}
	var now int64
	err := s.withConn(ctx, func(c Conn) error { return queryOne(ctx, c, s.q.now, nil, &now) })
	if err != nil {
		return 0, fmt.Errorf("%s: now: %w", s.d.Name, err)
	}
	return now, nil
}
