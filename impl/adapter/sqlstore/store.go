package sqlstore

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/idemcheck/idemcheck/impl/contract/clock"
	"github.com/idemcheck/idemcheck/impl/contract/store"
)

// Config configures a Store.
type Config struct {
	// Dialect is the database's SQL.
	Dialect Dialect
	// Backend makes the connections; the store closes it on Close.
	Backend Backend
	// Clock, when set, is the store's time; when nil the database's clock is.
	Clock clock.Source
}

// Store implements store.Store over a SQL database. It is safe for
// concurrent use; every operation runs on its own pooled connection.
type Store struct {
	d     Dialect
	q     queries
	be    Backend
	clock clock.Source
}

var (
	_ store.Store  = (*Store)(nil)
	_ store.Closer = (*Store)(nil)
)

// New creates the schema if it is missing and returns the store. On error
// the backend is closed.
func New(ctx context.Context, cfg Config) (*Store, error) {
	s := &Store{d: cfg.Dialect, q: buildQueries(cfg.Dialect), be: cfg.Backend, clock: cfg.Clock}
	if err := s.migrate(ctx); err != nil {
		cfg.Backend.Close()
		return nil, fmt.Errorf("%s: create schema: %w", s.d.Name, err)
	}
	return s, nil
}

func (s *Store) migrate(ctx context.Context) error {
	c, err := s.be.Acquire(ctx)
	if err != nil {
		return err
	}
	for _, stmt := range s.d.Schema {
		if _, err := c.Exec(ctx, s.q.rewrite(stmt)); err != nil {
			// The connection may be inside the schema's transaction.
			c.Crash()
			return err
		}
	}
	c.Release()
	return nil
}

// Close implements store.Closer: it closes every connection. Units of work
// still open are rolled back by the database.
func (s *Store) Close() error { return s.be.Close() }

// errRollback ends a write transaction that decided to change nothing.
var errRollback = errors.New("rollback")

// writeTx runs fn inside a BeginWrite transaction on its own connection and
// commits it, or rolls it back if fn returns an error (errRollback: without
// reporting one).
func (s *Store) writeTx(ctx context.Context, fn func(c Conn) error) error {
	c, err := s.be.Acquire(ctx)
	if err != nil {
		return err
	}
	if _, err := c.Exec(ctx, s.d.BeginWrite); err != nil {
		c.Crash()
		return err
	}
	if err := fn(c); err != nil {
		s.abort(c)
		if errors.Is(err, errRollback) {
			return nil
		}
		return err
	}
	if err := c.Commit(ctx); err != nil {
		s.abort(c)
		return err
	}
	c.Release()
	return nil
}

// abort rolls back c's transaction and releases c; if the rollback fails the
// connection is closed instead, which rolls back too. It does not use the
// caller's context: a cancelled context is often why it runs.
func (s *Store) abort(c Conn) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := c.Exec(ctx, "ROLLBACK"); err != nil {
		c.Crash()
		return
	}
	c.Release()
}

// row is the part of an inbox row a locked decision reads.
type row struct {
	state      store.State
	token      uint64
	leaseUntil int64
	attempts   int
}

// lockRow locks key's row for the rest of c's transaction and reads it.
func (s *Store) lockRow(ctx context.Context, c Conn, key store.Key) (row, bool, error) {
	var r row
	found := false
	err := c.Query(ctx, s.q.lockRow, keyArgs(key), func(sc Scanner) error {
		var token int64
		if err := sc.Scan(&r.state, &token, &r.leaseUntil, &r.attempts); err != nil {
			return err
		}
		r.token, found = uint64(token), true
		return nil
	})
	return r, found, err
}

// checkHeld is the fencing check, made on the locked row.
func (s *Store) checkHeld(ctx context.Context, c Conn, key store.Key, token uint64) error {
	r, found, err := s.lockRow(ctx, c, key)
	switch {
	case err != nil:
		return err
	case !found || r.state != store.Processing:
		return fmt.Errorf("%w: %s", store.ErrNotHeld, key)
	case r.token != token:
		return fmt.Errorf("%w: %s holds token %d, caller has %d", store.ErrStaleToken, key, r.token, token)
	}
	return nil
}

// nowOn returns the store's time, read on c when it is the database's.
func (s *Store) nowOn(ctx context.Context, c Conn) (int64, error) {
	if s.clock != nil {
		return s.clock.NowMs(), nil
	}
	var now int64
	err := queryOne(ctx, c, s.q.now, nil, &now)
	return now, err
}

// queryOne scans the single row query returns into dest.
func queryOne(ctx context.Context, c Conn, query string, args []any, dest ...any) error {
	n := 0
	err := c.Query(ctx, query, args, func(sc Scanner) error {
		n++
		return sc.Scan(dest...)
	})
	if err == nil && n != 1 {
		err = fmt.Errorf("%d rows, want 1", n)
	}
	return err
}

func keyArgs(k store.Key) []any { return []any{k.Tenant, k.Consumer, k.ID} }

func compareKeys(a, b store.Key) int {
	return cmp.Or(strings.Compare(a.Tenant, b.Tenant), strings.Compare(a.Consumer, b.Consumer), strings.Compare(a.ID, b.ID))
}
