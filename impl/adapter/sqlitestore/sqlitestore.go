// Package sqlitestore is the store contract on SQLite, through the pure-Go
// driver modernc.org/sqlite, in a file or in memory. The SQL is shared with
// the PostgreSQL store (impl/sqlstore); this package holds what is SQLite's:
// the dialect, the connection handling and the in-memory database.
//
// SQLite serialises writers. Claim and Fail run in BEGIN IMMEDIATE
// transactions; a unit of work opens a deferred transaction, which takes no
// lock, and its Commit's first statement is a write, so it waits for the
// write lock (busy timeout) rather than failing on a read-to-write upgrade.
//
// In memory, the database lives in SQLite's memdb VFS (file:/name?vfs=memdb):
// every connection of the pool sees the same database with SQLite's ordinary
// locking. A shared-cache ":memory:" database would answer SQLITE_LOCKED,
// which the busy timeout does not retry, and a single connection would
// deadlock the single-goroutine runner as soon as one worker's open unit of
// work pinned it. The store keeps one connection open for its whole life,
// because a memdb database disappears with its last connection — a crashed
// worker's, say.
package sqlitestore

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"path/filepath"
	"regexp"
	"sync/atomic"
	"time"

	// The pure-Go SQLite driver, registered as "sqlite".
	_ "modernc.org/sqlite"

	"github.com/idemcheck/idemcheck/impl/adapter/sqlstore"
	"github.com/idemcheck/idemcheck/impl/contract/clock"
	"github.com/idemcheck/idemcheck/impl/contract/store"
)

// Options configure a store.
type Options struct {
	// Path is the database file. Empty: an in-memory database.
	Path string
	// MemoryName names the in-memory database when Path is empty; stores
	// of one process opened with the same name share it. Empty: a name no
	// other store of the process has.
	MemoryName string
	// Clock, when set, is the store's time; when nil SQLite's clock is.
	Clock clock.Source
	// BusyTimeout is how long a statement waits for another connection's
	// lock before failing. Zero: 10 s.
	BusyTimeout time.Duration
}

// Store is a store.Store on SQLite; its methods are sqlstore.Store's.
type Store struct {
	*sqlstore.Store
}

var (
	_ store.Store  = (*Store)(nil)
	_ store.Closer = (*Store)(nil)
)

var memoryNames atomic.Int64

var validMemoryName = regexp.MustCompile(`^[A-Za-z0-9_.-]+$`)

// Open opens (creating if needed) the database and its tables.
func Open(ctx context.Context, opts Options) (*Store, error) {
	dsn, memory, err := dataSource(opts)
	if err != nil {
		return nil, err
	}
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("sqlite: open: %w", err)
	}
	// Idle connections are kept so a busy pool does not reopen (and
	// re-run the pragmas of) a connection per call. There is no limit on
	// open connections: see sqlstore.Backend.Acquire.
	db.SetMaxIdleConns(16)
	be := &backend{db: db}
	if memory {
		if be.anchor, err = db.Conn(ctx); err != nil {
			db.Close()
			return nil, fmt.Errorf("sqlite: open: %w", err)
		}
	}
	s, err := sqlstore.New(ctx, sqlstore.Config{Dialect: dialect, Backend: be, Clock: opts.Clock})
	if err != nil {
		return nil, err
	}
	return &Store{Store: s}, nil
}

// dataSource returns the driver's DSN for opts and whether it is in memory.
func dataSource(opts Options) (string, bool, error) {
	busy := opts.BusyTimeout
	if busy == 0 {
		busy = 10 * time.Second
	}
	q := url.Values{}
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", busy.Milliseconds()))
	if opts.Path == "" {
		name := opts.MemoryName
		if name == "" {
			name = fmt.Sprintf("idemcheck-%d", memoryNames.Add(1))
		}
		if !validMemoryName.MatchString(name) {
			return "", false, fmt.Errorf("sqlite: memory name %q: use letters, digits, '_', '.' and '-'", name)
		}
		q.Set("vfs", "memdb")
		return "file:/" + name + "?" + q.Encode(), true, nil
	}
	abs, err := filepath.Abs(opts.Path)
	if err != nil {
		return "", false, fmt.Errorf("sqlite: path %q: %w", opts.Path, err)
	}
	// WAL lets readers run beside the writer; NORMAL synchronous is
	// durable across a process crash, which is the crash simulated here.
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "synchronous(NORMAL)")
	u := url.URL{Scheme: "file", Path: abs, RawQuery: q.Encode()}
	return u.String(), false, nil
}

// dialect is SQLite's SQL.
var dialect = sqlstore.Dialect{
	Name:        "sqlite",
	Placeholder: "?",
	Inbox:       "inbox",
	Ledger:      "ledger",
	Tokens:      "token_seq",
	BeginWrite:  "BEGIN IMMEDIATE",
	BeginUnit:   "BEGIN DEFERRED",
	// A no-op write, so that the write lock is taken first (see
	// sqlstore.Dialect.LockRow).
	LockRow: `UPDATE {inbox} SET token = token WHERE tenant = $1 AND consumer = $2 AND event_id = $3
		RETURNING state, token, lease_until, attempts`,
	NextToken: `UPDATE {tokens} SET last = last + 1 WHERE id = 1 RETURNING last`,
	Now:       `SELECT CAST(unixepoch('subsec') * 1000 AS INTEGER)`,
	Schema: []string{
		`BEGIN IMMEDIATE`,
		`CREATE TABLE IF NOT EXISTS {inbox} (
			tenant      TEXT    NOT NULL,
			consumer    TEXT    NOT NULL,
			event_id    TEXT    NOT NULL,
			state       TEXT    NOT NULL CHECK (state IN ('processing', 'processed', 'failed')),
			started_at  INTEGER NOT NULL,
			finished_at INTEGER NOT NULL DEFAULT 0,
			attempts    INTEGER NOT NULL,
			token       INTEGER NOT NULL,
			lease_until INTEGER NOT NULL DEFAULT 0,
			last_error  TEXT    NOT NULL DEFAULT '',
			PRIMARY KEY (tenant, consumer, event_id)
		) STRICT, WITHOUT ROWID`,
		`CREATE INDEX IF NOT EXISTS inbox_cleanup ON {inbox} (state, finished_at)`,
		`CREATE TABLE IF NOT EXISTS {ledger} (
			consumer     TEXT    NOT NULL,
			event_id     TEXT    NOT NULL,
			order_id     TEXT    NOT NULL,
			user_id      TEXT    NOT NULL,
			amount_cents INTEGER NOT NULL,
			UNIQUE (consumer, event_id)
		) STRICT`,
		`CREATE TABLE IF NOT EXISTS {tokens} (
			id   INTEGER PRIMARY KEY CHECK (id = 1),
			last INTEGER NOT NULL
		) STRICT`,
		`INSERT INTO {tokens} (id, last) VALUES (1, 0) ON CONFLICT (id) DO NOTHING`,
		`COMMIT`,
	},
}
