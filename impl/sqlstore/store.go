package sqlstore

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/idemcheck/idemcheck/impl/clock"
	"github.com/idemcheck/idemcheck/impl/store"
)

// Config configures a Store.
type Config struct {
	Dialect Dialect
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

// maxClaimRounds bounds the retries of a first claim that lost the insert
// race (PostgreSQL only: SQLite serialises writers). Each round sees a
// committed row the round before did not, so two are enough unless the row
// keeps being deleted and inserted again; then the claim gives up.
const maxClaimRounds = 16

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

// Claim implements store.Store. The key's row is locked before anything is
// decided; a missing row is inserted first (with no token yet) so that the
// token, too, is drawn under the row's lock.
func (s *Store) Claim(ctx context.Context, key store.Key, leaseMs int64) (store.Claim, error) {
	var out store.Claim
	err := s.writeTx(ctx, func(c Conn) error {
		for range maxClaimRounds {
			r, found, err := s.lockRow(ctx, c, key)
			if err != nil {
				return err
			}
			now, err := s.nowOn(ctx, c)
			if err != nil {
				return err
			}
			out = store.Claim{AtMs: now}
			attempts, takeover := 1, false
			if found {
				switch {
				case r.state == store.Processed:
					out.Outcome = store.AlreadyProcessed
					return errRollback
				case r.state == store.Processing && now < r.leaseUntil:
					out.Outcome = store.Locked
					return errRollback
				}
				attempts, takeover = r.attempts+1, r.state == store.Processing
			} else {
				n, err := c.Exec(ctx, s.q.insertClaim, key.Tenant, key.Consumer, key.ID, now, now+leaseMs)
				if err != nil {
					return err
				}
				if n == 0 {
					continue // a concurrent first claim inserted it: lock that row
				}
			}
			var token int64
			if err := queryOne(ctx, c, s.q.nextToken, nil, &token); err != nil {
				return fmt.Errorf("draw token: %w", err)
			}
			n, err := c.Exec(ctx, s.q.acquire, key.Tenant, key.Consumer, key.ID, now, attempts, token, now+leaseMs)
			if err != nil {
				return err
			}
			if n != 1 {
				return fmt.Errorf("acquire updated %d rows", n)
			}
			out = store.Claim{Outcome: store.Acquired, Token: uint64(token), Attempt: attempts, Takeover: takeover, AtMs: now}
			return nil
		}
		return fmt.Errorf("row inserted and deleted under the claim %d times", maxClaimRounds)
	})
	if err != nil {
		return store.Claim{}, fmt.Errorf("%s: claim %s: %w", s.d.Name, key, err)
	}
	return out, nil
}

// Fail implements store.Store.
func (s *Store) Fail(ctx context.Context, key store.Key, token uint64, reason string) error {
	err := s.writeTx(ctx, func(c Conn) error {
		if err := s.checkHeld(ctx, c, key, token); err != nil {
			return err
		}
		_, err := c.Exec(ctx, s.q.fail, key.Tenant, key.Consumer, key.ID, reason)
		return err
	})
	if err != nil {
		return fmt.Errorf("%s: fail %s: %w", s.d.Name, key, err)
	}
	return nil
}

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

func compareKeys(a, b store.Key) int {
	return cmp.Or(strings.Compare(a.Tenant, b.Tenant), strings.Compare(a.Consumer, b.Consumer), strings.Compare(a.ID, b.ID))
}
