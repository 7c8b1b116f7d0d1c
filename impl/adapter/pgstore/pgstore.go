// Package pgstore is the store contract on PostgreSQL, through
// github.com/jackc/pgx/v5. The SQL is shared with the SQLite store
// (impl/sqlstore); this package holds what is PostgreSQL's: the dialect, a
// schema per store, and the connection pool.
//
// Rows are locked with SELECT ... FOR UPDATE at READ COMMITTED, so each
// statement sees the latest committed row once it holds the lock. Fencing
// tokens come from a sequence, drawn only while the key's row is locked.
//
// Each store lives in its own schema (Options.Schema), created on Open, so
// tests and harness runs are isolated from each other; DropSchema removes
// one. Close drops nothing.
package pgstore

import (
	"context"
	"fmt"
	"regexp"

	"github.com/jackc/pgx/v5"

	"github.com/idemcheck/idemcheck/impl/adapter/sqlstore"
	"github.com/idemcheck/idemcheck/impl/contract/clock"
	"github.com/idemcheck/idemcheck/impl/contract/store"
)

// DSNEnv names the environment variable the tests read the database's
// connection string from; they skip when it is unset.
const DSNEnv = "IDEMCHECK_POSTGRES_DSN"

// DefaultSchema is the schema a store uses when Options.Schema is empty.
const DefaultSchema = "idemcheck"

// Options configure a store.
type Options struct {
	// DSN is the connection string, a URL or key=value pairs as pgx parses
	// them: postgres://postgres@127.0.0.1:5432/test?sslmode=disable.
	DSN string
	// Schema is the schema holding the store's tables, created if missing:
	// lower-case letters, digits and '_'. Empty: DefaultSchema.
	Schema string
	// Clock, when set, is the store's time; when nil the database's clock
	// (clock_timestamp()) is.
	Clock clock.Source
	// MaxIdleConns is how many idle connections the pool keeps. Zero: 8.
	MaxIdleConns int
}

// Store is a store.Store on PostgreSQL; its store methods are
// sqlstore.Store's.
type Store struct {
	*sqlstore.Store
	schema string
	cfg    *pgx.ConnConfig
}

var (
	_ store.Store  = (*Store)(nil)
	_ store.Closer = (*Store)(nil)
)

var validSchema = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,62}$`)

// Open connects, creates the schema and its tables if missing, and returns
// the store.
func Open(ctx context.Context, opts Options) (*Store, error) {
	schema := opts.Schema
	if schema == "" {
		schema = DefaultSchema
	}
	if !validSchema.MatchString(schema) {
		return nil, fmt.Errorf("postgres: schema %q: use lower-case letters, digits and '_'", schema)
	}
	cfg, err := pgx.ParseConfig(opts.DSN)
	if err != nil {
		return nil, fmt.Errorf("postgres: %w", err)
	}
	// Named after the schema, so a test can find the store's sessions in
	// pg_stat_activity.
	cfg.RuntimeParams["application_name"] = ApplicationName(schema)
	maxIdle := opts.MaxIdleConns
	if maxIdle == 0 {
		maxIdle = 8
	}
	p := newPool(cfg, maxIdle)
	s, err := sqlstore.New(ctx, sqlstore.Config{Dialect: newDialect(schema), Backend: p, Clock: opts.Clock})
	if err != nil {
		return nil, err
	}
	return &Store{Store: s, schema: schema, cfg: cfg}, nil
}

// ApplicationName is the application_name of a store's sessions.
func ApplicationName(schema string) string { return "idemcheck:" + schema }

// Schema returns the store's schema.
func (s *Store) Schema() string { return s.schema }

// DropSchema drops the store's schema and everything in it, on a connection
// of its own, so it may be called after Close. It refuses "public".
func (s *Store) DropSchema(ctx context.Context) error {
	if s.schema == "public" {
		return fmt.Errorf("postgres: refusing to drop schema public")
	}
	c, err := pgx.ConnectConfig(ctx, s.cfg)
	if err != nil {
		return fmt.Errorf("postgres: drop schema: %w", err)
	}
	defer c.Close(context.WithoutCancel(ctx))
	if _, err := c.Exec(ctx, `DROP SCHEMA IF EXISTS `+quote(s.schema)+` CASCADE`); err != nil {
		return fmt.Errorf("postgres: drop schema %s: %w", s.schema, err)
	}
	return nil
}

// quote quotes a validated identifier.
func quote(ident string) string { return pgx.Identifier{ident}.Sanitize() }

// schemaLock is the advisory lock that serialises schema creation: two
// processes running CREATE ... IF NOT EXISTS at once can still collide.
const schemaLock = 0x1de3c4ec

func newDialect(schema string) sqlstore.Dialect {
	q := quote(schema)
	const readCommitted = "BEGIN ISOLATION LEVEL READ COMMITTED"
	return sqlstore.Dialect{
		Name:        "postgres",
		Placeholder: "$",
		Inbox:       q + ".inbox",
		Ledger:      q + ".ledger",
		Tokens:      q + ".token_seq",
		// Stated, not left to default_transaction_isolation: at REPEATABLE
		// READ a unit of work would check the token against its snapshot.
		BeginWrite: readCommitted,
		BeginUnit:  readCommitted,
		LockRow: `SELECT state, token, lease_until, attempts FROM {inbox}
			WHERE tenant = $1 AND consumer = $2 AND event_id = $3 FOR UPDATE`,
		NextToken: `SELECT nextval('{tokens}')`,
		// clock_timestamp, not now(): now() is the transaction's start, and a
		// unit of work's transaction starts at Begin, not at Commit.
		Now: `SELECT floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint`,
		Schema: []string{
			`BEGIN`,
			fmt.Sprintf(`SELECT pg_advisory_xact_lock(%d)`, schemaLock),
			`CREATE SCHEMA IF NOT EXISTS ` + q,
			`CREATE TABLE IF NOT EXISTS {inbox} (
				tenant      text   NOT NULL,
				consumer    text   NOT NULL,
				event_id    text   NOT NULL,
				state       text   NOT NULL CHECK (state IN ('processing', 'processed', 'failed')),
				started_at  bigint NOT NULL,
				finished_at bigint NOT NULL DEFAULT 0,
				attempts    bigint NOT NULL,
				token       bigint NOT NULL,
				lease_until bigint NOT NULL DEFAULT 0,
				last_error  text   NOT NULL DEFAULT '',
				PRIMARY KEY (tenant, consumer, event_id)
			)`,
			`CREATE INDEX IF NOT EXISTS inbox_cleanup ON {inbox} (state, finished_at)`,
			`CREATE TABLE IF NOT EXISTS {ledger} (
				consumer     text   NOT NULL,
				event_id     text   NOT NULL,
				order_id     text   NOT NULL,
				user_id      text   NOT NULL,
				amount_cents bigint NOT NULL,
				UNIQUE (consumer, event_id)
			)`,
			`CREATE SEQUENCE IF NOT EXISTS {tokens}`,
			`COMMIT`,
		},
	}
}
