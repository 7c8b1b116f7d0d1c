// Package idemkeys is a library-shaped example: an idempotency-key store
// over database/sql, with the periodic clean-up such stores run. A key is
// claimed inside the caller's transaction (INSERT ... ON CONFLICT DO
// NOTHING), so that the key and the caller's work commit together, and is
// kept for a TTL; a goroutine started by New deletes the expired keys every
// SweepEvery, with a time.Ticker, until Close stops it.
//
// The SQL is the common subset of SQLite and PostgreSQL; Schema is the
// table the application creates with its own. It knows nothing of
// idemcheck; examples/consumers/sweeper puts a consumer built on it under
// the harness.
package idemkeys

import (
	"context"
	"database/sql"
	"errors"
	"sync"
	"time"
)

// Schema is the store's table.
const Schema = `
CREATE TABLE idempotency_keys (
	idem_key   TEXT PRIMARY KEY,
	expires_at BIGINT NOT NULL
);
CREATE INDEX idempotency_keys_expires_at ON idempotency_keys (expires_at);`

// Options configure a Store.
type Options struct {
	// TTL is how long a key is kept after its claim (default 24h): longer
	// than any redelivery or replay of the message it guards.
	TTL time.Duration
	// SweepEvery is the period of the clean-up (default 1m).
	SweepEvery time.Duration
	// OnSweepError, when set, is told of a clean-up that failed (it is
	// tried again at the next tick).
	OnSweepError func(error)
}

// Store claims idempotency keys.
type Store struct {
	db   *sql.DB
	opts Options

	stop    chan struct{}
	stopped sync.WaitGroup
	once    sync.Once
}

// New returns a store over db and starts its clean-up.
func New(db *sql.DB, opts Options) *Store {
	if opts.TTL <= 0 {
		opts.TTL = 24 * time.Hour
	}
	if opts.SweepEvery <= 0 {
		opts.SweepEvery = time.Minute
	}
	s := &Store{db: db, opts: opts, stop: make(chan struct{})}
	s.stopped.Add(1)
	go s.sweepLoop()
	return s
}

// sweepLoop deletes the expired keys at every tick until Close.
func (s *Store) sweepLoop() {
	defer s.stopped.Done()
	tick := time.NewTicker(s.opts.SweepEvery)
	defer tick.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-tick.C:
			if _, err := s.Sweep(context.Background()); err != nil && s.opts.OnSweepError != nil {
				s.opts.OnSweepError(err)
			}
		}
	}
}

// Sweep deletes the keys expired by now and says how many.
func (s *Store) Sweep(ctx context.Context) (int64, error) {
	res, err := s.db.ExecContext(ctx, `DELETE FROM idempotency_keys WHERE expires_at < $1`, time.Now().UnixMilli())
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

// Claim records key in tx unless it is recorded already: true when this
// transaction claimed it (commit it with the work the key guards), false
// when the key was claimed before.
func (s *Store) Claim(ctx context.Context, tx *sql.Tx, key string) (bool, error) {
	res, err := tx.ExecContext(ctx, `INSERT INTO idempotency_keys (idem_key, expires_at) VALUES ($1, $2) ON CONFLICT (idem_key) DO NOTHING`,
		key, time.Now().Add(s.opts.TTL).UnixMilli())
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

// ErrClosed is returned by Close called twice.
var ErrClosed = errors.New("idemkeys: store closed")

// Close stops the clean-up and waits for a sweep in progress to end.
func (s *Store) Close() error {
	err := ErrClosed
	s.once.Do(func() {
		close(s.stop)
		err = nil
	})
	s.stopped.Wait()
	return err
}
