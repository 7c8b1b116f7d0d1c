package backend

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
)

// What the team's code creates after its schema ran — a Worker factory or
// a handler running CREATE TABLE IF NOT EXISTS, CREATE INDEX IF NOT EXISTS,
// a library creating its table on first use — is gone at the next reset:
// every scenario starts from the schema's state alone. PRAGMA
// schema_version tells cheaply whether anything changed; only then is
// sqlite_master read.

// schemaObject is one entry of sqlite_master.
type schemaObject struct{ typ, name, sql string }

// readSchema lists the database's own objects (not SQLite's) and its
// schema version.
func readSchema(ctx context.Context, db *sql.DB) (map[string]schemaObject, int64, error) {
	var version int64
	if err := db.QueryRowContext(ctx, "PRAGMA schema_version").Scan(&version); err != nil {
		return nil, 0, err
	}
	rows, err := db.QueryContext(ctx, `SELECT type, name, coalesce(sql, '') FROM sqlite_master WHERE name NOT LIKE 'sqlite_%'`)
	if err != nil {
		return nil, 0, err
	}
	defer rows.Close()
	out := map[string]schemaObject{}
	for rows.Next() {
		var o schemaObject
		if err := rows.Scan(&o.typ, &o.name, &o.sql); err != nil {
			return nil, 0, err
		}
		out[o.typ+"\x00"+o.name] = o
	}
	return out, version, rows.Err()
}

// dropAdded drops what was created since the schema ran. It reports
// false when the schema's own objects were changed or dropped (a reset by
// rows cannot bring them back).
func (s *sqliteSession) dropAdded(ctx context.Context) (bool, error) {
	var version int64
	if err := s.admin.QueryRowContext(ctx, "PRAGMA schema_version").Scan(&version); err != nil {
		return false, err
	}
	if version == s.schemaVersion {
		return true, nil
	}
	now, _, err := readSchema(ctx, s.admin)
	if err != nil {
		return false, err
	}
	for k, o := range s.baseline {
		if n, ok := now[k]; !ok || n.sql != o.sql {
			return false, nil
		}
	}
	// Triggers, views and indexes before the tables they belong to.
	for _, typ := range []string{"trigger", "view", "index", "table"} {
		for k, o := range now {
			if _, kept := s.baseline[k]; kept || o.typ != typ {
				continue
			}
			if typ == "index" && o.sql == "" {
				continue // an automatic index goes with its table
			}
			if _, err := s.admin.ExecContext(ctx, fmt.Sprintf("DROP %s IF EXISTS %s", strings.ToUpper(typ), quoteIdent(o.name))); err != nil {
				return false, fmt.Errorf("sqlite: drop %s %s, created after the schema: %w", typ, o.name, err)
			}
		}
	}
	if err := s.admin.QueryRowContext(ctx, "PRAGMA schema_version").Scan(&s.schemaVersion); err != nil {
		return false, err
	}
	return true, nil
}

// dropAll empties the database of every object, and forgets what the
// schema made, so that it runs again.
func (s *sqliteSession) dropAll(ctx context.Context) error {
	now, _, err := readSchema(ctx, s.admin)
	if err != nil {
		return err
	}
	for _, typ := range []string{"trigger", "view", "index", "table"} {
		for _, o := range now {
			if o.typ != typ || (typ == "index" && o.sql == "") {
				continue
			}
			if _, err := s.admin.ExecContext(ctx, fmt.Sprintf("DROP %s IF EXISTS %s", strings.ToUpper(typ), quoteIdent(o.name))); err != nil {
				return fmt.Errorf("sqlite: drop %s %s: %w", typ, o.name, err)
			}
		}
	}
	for _, r := range s.reset {
		r.del.Close()
		if r.insert != nil {
			r.insert.Close()
		}
	}
	s.reset, s.prepared = nil, false
	return nil
}
