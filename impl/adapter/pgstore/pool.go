package pgstore

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/idemcheck/idemcheck/impl/adapter/sqlstore"
)

// pool is a minimal connection pool over pgx.Conn. It never makes a caller
// wait for another's connection (there is no limit on open connections):
// the deterministic runner holds one per open unit of work on the goroutine
// that asks for the next. It keeps every connection it made so Close can end
// units of work a scenario left open, instead of leaking their sessions.
// (pgxpool, and pgx's database/sql driver which imports it, would also pull
// in github.com/jackc/puddle/v2, which the module does not require.)
type pool struct {
	cfg     *pgx.ConnConfig
	maxIdle int

	mu     sync.Mutex
	idle   []*pgx.Conn
	all    map[*pgx.Conn]struct{}
	closed bool
}

var errPoolClosed = errors.New("postgres: store closed")

func newPool(cfg *pgx.ConnConfig, maxIdle int) *pool {
	return &pool{cfg: cfg, maxIdle: maxIdle, all: map[*pgx.Conn]struct{}{}}
}

// closeTimeout bounds the goodbye to the server when a connection closes.
const closeTimeout = 5 * time.Second

// Acquire implements sqlstore.Backend.
func (p *pool) Acquire(ctx context.Context) (sqlstore.Conn, error) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil, errPoolClosed
	}
	for len(p.idle) > 0 {
		c := p.idle[len(p.idle)-1]
		p.idle = p.idle[:len(p.idle)-1]
		if !c.IsClosed() {
			p.mu.Unlock()
			return &conn{p: p, c: c}, nil
		}
		delete(p.all, c)
	}
	p.mu.Unlock()
	c, err := pgx.ConnectConfig(ctx, p.cfg)
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		c.Close(context.Background())
		return nil, errPoolClosed
	}
	p.all[c] = struct{}{}
	return &conn{p: p, c: c}, nil
}

// put takes c back, or closes it if it is broken, inside a transaction,
// or surplus.
func (p *pool) put(c *pgx.Conn) {
	p.mu.Lock()
	reuse := !p.closed && len(p.idle) < p.maxIdle && !c.IsClosed() && c.PgConn().TxStatus() == 'I'
	if reuse {
		p.idle = append(p.idle, c)
	} else {
		delete(p.all, c)
	}
	p.mu.Unlock()
	if !reuse {
		closeConn(c)
	}
}

func (p *pool) forget(c *pgx.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.all, c)
}

func closeConn(c *pgx.Conn) {
	ctx, cancel := context.WithTimeout(context.Background(), closeTimeout)
	defer cancel()
	_ = c.Close(ctx)
}

// Close closes idle connections politely and cuts the sockets of those in
// use; the server rolls back whatever they had open.
func (p *pool) Close() error {
	p.mu.Lock()
	p.closed = true
	idle := p.idle
	var busy []*pgx.Conn
	for c := range p.all {
		busy = append(busy, c)
	}
	p.idle, p.all = nil, map[*pgx.Conn]struct{}{}
	p.mu.Unlock()
	for _, c := range idle {
		closeConn(c)
	}
	for _, c := range busy {
		if !isIn(idle, c) {
			// net.Conn.Close is safe beside a goroutine still using c.
			_ = c.PgConn().Conn().Close()
		}
	}
	return nil
}

func isIn(cs []*pgx.Conn, c *pgx.Conn) bool {
	for _, x := range cs {
		if x == c {
			return true
		}
	}
	return false
}

// conn adapts a pooled *pgx.Conn.
type conn struct {
	p *pool
	c *pgx.Conn
}

// Exec implements sqlstore.Conn.
func (c *conn) Exec(ctx context.Context, query string, args ...any) (int64, error) {
	tag, err := c.c.Exec(ctx, query, args...)
	return tag.RowsAffected(), err
}

// Query implements sqlstore.Conn.
func (c *conn) Query(ctx context.Context, query string, args []any, each func(sqlstore.Scanner) error) error {
	rows, err := c.c.Query(ctx, query, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		if err := each(rows); err != nil {
			return err
		}
	}
	return rows.Err()
}

// Commit sends COMMIT and checks what the server did: COMMIT in a failed
// transaction is not an error in PostgreSQL, it answers ROLLBACK.
func (c *conn) Commit(ctx context.Context) error {
	tag, err := c.c.Exec(ctx, "COMMIT")
	if err != nil {
		return err
	}
	if tag.String() != "COMMIT" {
		return errors.New("postgres: transaction was rolled back (" + tag.String() + ")")
	}
	return nil
}

// Crash cuts the socket without the protocol's goodbye, as a dying process
// does; the server sees the connection drop and rolls back its transaction.
func (c *conn) Crash() {
	c.p.forget(c.c)
	_ = c.c.PgConn().Conn().Close()
	closeConn(c.c) // frees pgx's side; the socket is already gone
}

// Release implements sqlstore.Conn: the pool takes the connection back.
func (c *conn) Release() { c.p.put(c.c) }
