package sqlitestore

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"

	"github.com/idemcheck/idemcheck/impl/adapter/sqlstore"
)

// backend is the database/sql pool, plus the connection that keeps an
// in-memory database alive.
type backend struct {
	db     *sql.DB
	anchor *sql.Conn
}

// Acquire implements sqlstore.Backend.
func (b *backend) Acquire(ctx context.Context) (sqlstore.Conn, error) {
	c, err := b.db.Conn(ctx)
	if err != nil {
		return nil, err
	}
	return conn{c}, nil
}

// Close implements sqlstore.Backend, closing the in-memory database's
// anchor too.
func (b *backend) Close() error {
	var err error
	if b.anchor != nil {
		err = b.anchor.Close()
	}
	return errors.Join(err, b.db.Close())
}

// conn adapts a *sql.Conn.
type conn struct{ c *sql.Conn }

// Exec implements sqlstore.Conn.
func (c conn) Exec(ctx context.Context, query string, args ...any) (int64, error) {
	res, err := c.c.ExecContext(ctx, query, args...)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

// Query implements sqlstore.Conn.
func (c conn) Query(ctx context.Context, query string, args []any, each func(sqlstore.Scanner) error) error {
	rows, err := c.c.QueryContext(ctx, query, args...)
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

// Commit implements sqlstore.Conn.
func (c conn) Commit(ctx context.Context) error {
	_, err := c.c.ExecContext(ctx, "COMMIT")
	return err
}

// Crash makes database/sql close the driver connection (sqlite3_close_v2),
// which rolls back the open transaction and releases its locks, and drop it
// from the pool.
func (c conn) Crash() {
	_ = c.c.Raw(func(any) error { return driver.ErrBadConn })
}

// Release implements sqlstore.Conn: database/sql takes the connection
// back.
func (c conn) Release() { _ = c.c.Close() }
