package consumerharness

import "github.com/idemcheck/idemcheck/internal/consumerharness/backend"

// SQLite declares the settings the team runs SQLite with, as the query
// parameters of its modernc.org/sqlite DSN, e.g.
// "_pragma=journal_mode(WAL)&_pragma=busy_timeout(5000)&_txlock=immediate&_pragma=foreign_keys(1)".
// Every scenario's database (a real file on a RAM-backed directory) and
// every connection to it, the workers' and the harness's, open with them.
// Without it, the defaults are SQLite's and the driver's: a rollback
// journal (journal_mode DELETE), no busy timeout, deferred BEGIN. A
// parameter that would make the database not the run's own (a file name,
// vfs, mode=memory, nolock) is refused, naming it. See the package
// documentation, "Lock waits (SQLite)".
func SQLite(params string) Option {
	return func(c *config) { c.backend = backend.SQLite{Params: params} }
}
