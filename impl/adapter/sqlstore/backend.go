package sqlstore

import "context"

// Scanner reads the current row of a query.
type Scanner interface {
	Scan(dest ...any) error
}

// Conn is one database connection, used by one goroutine at a time. It
// carries no transaction state of its own: the store sends BEGIN, COMMIT
// and ROLLBACK as statements, so both databases are driven the same way.
type Conn interface {
	// Exec runs a statement and returns how many rows it affected.
	Exec(ctx context.Context, query string, args ...any) (int64, error)
	// Query runs a statement and calls each for every row it returns.
	Query(ctx context.Context, query string, args []any, each func(Scanner) error) error
	// Commit commits the open transaction, and fails if the database rolled
	// it back instead.
	Commit(ctx context.Context) error
	// Crash closes the connection abruptly, under whatever transaction is
	// open, and never returns it to the pool.
	Crash()
	// Release returns the connection to the pool, or closes it if it is
	// broken or still inside a transaction.
	Release()
}

// Backend makes connections to one database.
type Backend interface {
	// Acquire returns a connection for the caller's exclusive use. It must
	// not wait for connections that other callers hold: the deterministic
	// runner holds one per open unit of work, on the goroutine that asks.
	Acquire(ctx context.Context) (Conn, error)
	// Close closes every connection.
	Close() error
}

// Dialect is what differs between the databases' SQL. Every statement
// writes its parameters as $1, $2, ... and its tables as {inbox}, {ledger}
// and {tokens}; the store rewrites them.
type Dialect struct {
	// Name prefixes error messages.
	Name string
	// Placeholder is the prefix of numbered parameters: "$" (PostgreSQL) or
	// "?" (SQLite, where $1 would be a named parameter).
	Placeholder string
	// Inbox, Ledger and Tokens are the tables' names as statements spell
	// them (schema-qualified and quoted where that matters).
	Inbox, Ledger, Tokens string
	// BeginWrite opens the transaction of a claim or a fail.
	BeginWrite string
	// BeginUnit opens a unit of work's transaction. It must take no lock
	// and no snapshot: the token is checked by Commit, after any takeover
	// that happened while the unit was open.
	BeginUnit string
	// LockRow locks the key's inbox row ($1 tenant, $2 consumer, $3 event_id)
	// for the rest of the transaction and returns its state, token,
	// lease_until and attempts, or no row. In a unit of work it is the first
	// statement, so on SQLite it must be a write: a deferred transaction
	// that reads first and writes later can fail with SQLITE_BUSY at once
	// instead of waiting for the lock.
	LockRow string
	// NextToken draws the next fencing token.
	NextToken string
	// Now returns the database's clock in Unix milliseconds.
	Now string
	// Schema creates the tables if they are missing. The statements run in
	// order on one connection and frame their own transaction.
	Schema []string
}
