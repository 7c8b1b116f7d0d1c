package migrations

import (
	"context"
	"database/sql"
	"embed"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strconv"
	"strings"
)

//go:embed migrations
var files embed.FS

// Dialect names the database the migrations are written for.
type Dialect string

// The dialects, each a directory of migrations/.
const (
	SQLite   Dialect = "sqlite"
	Postgres Dialect = "postgres"
)

// Migration is one file of migrations/DIALECT: NNNN_name.sql.
type Migration struct {
	Version int64
	Name    string
	Up      string
}

// Load reads d's migrations, in version order.
func Load(d Dialect) ([]Migration, error) {
	dir := path.Join("migrations", string(d))
	entries, err := fs.ReadDir(files, dir)
	if err != nil {
		return nil, err
	}
	var out []Migration
	for _, e := range entries {
		base, ok := strings.CutSuffix(e.Name(), ".sql")
		if !ok {
			continue
		}
		num, name, ok := strings.Cut(base, "_")
		v, err := strconv.ParseInt(num, 10, 64)
		if !ok || err != nil {
			return nil, fmt.Errorf("migration file %s: want NNNN_name.sql", e.Name())
		}
		up, err := fs.ReadFile(files, path.Join(dir, e.Name()))
		if err != nil {
			return nil, err
		}
		out = append(out, Migration{Version: v, Name: name, Up: string(up)})
	}
	slices.SortFunc(out, func(a, b Migration) int { return int(a.Version - b.Version) })
	return out, nil
}

// lockKey is the advisory lock that keeps two instances of the service
// from migrating at once on PostgreSQL.
const lockKey = 7_361_294

// Migrate applies d's migrations that schema_migrations does not list,
// each in a transaction of its own with its row in schema_migrations. A
// file is sent whole, as one multi-statement Exec: its comments, quotes,
// trigger bodies and dollar-quoted function bodies reach the database as
// written.
func Migrate(ctx context.Context, db *sql.DB, d Dialect) error {
	ms, err := Load(d)
	if err != nil {
		return err
	}
	if _, err := db.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
	version    BIGINT PRIMARY KEY,
	name       TEXT NOT NULL,
	applied_at TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP
)`); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	for _, m := range ms {
		if err := apply(ctx, db, d, m); err != nil {
			return fmt.Errorf("migrate: %04d_%s: %w", m.Version, m.Name, err)
		}
	}
	return nil
}

func apply(ctx context.Context, db *sql.DB, d Dialect, m Migration) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if d == Postgres {
		if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock($1)`, lockKey); err != nil {
			return err
		}
	}
	var applied int
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM schema_migrations WHERE version = $1`, m.Version).Scan(&applied); err != nil {
		return err
	}
	if applied > 0 {
		return nil
	}
	if _, err := tx.ExecContext(ctx, m.Up); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO schema_migrations (version, name) VALUES ($1, $2)`, m.Version, m.Name); err != nil {
		return err
	}
	return tx.Commit()
}
