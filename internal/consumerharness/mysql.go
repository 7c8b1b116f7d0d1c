package consumerharness

import "github.com/idemcheck/idemcheck/internal/consumerharness/backend"

// MySQLEnv names the environment variable that conventionally holds the
// MySQL or MariaDB DSN for MySQL, for example
// root@tcp(127.0.0.1:3306)/test.
const MySQLEnv = "IDEMCHECK_MYSQL_DSN"

// MySQL plays every scenario on MySQL or MariaDB at dsn (a
// go-sql-driver/mysql DSN) instead of the embedded SQLite. Each Check,
// Hunt or Replay gets databases of its own, dropped when it ends (or, if
// its process is killed, by the next run's start); the schema runs once,
// and later scenarios start from the same state, restored (tables
// truncated, seeded rows put back, AUTO_INCREMENT counters set back), or
// from the database made anew after a worker's DDL. The user needs to
// create and drop databases. Lock waits answer at once
// (innodb_lock_wait_timeout and lock_wait_timeout 0) and the scheduler
// decides who waits; the session's timestamp follows the scenario's
// clock. See backend.MySQL.
func MySQL(dsn string) Option {
	return func(c *config) { c.backend = backend.MySQL{DSN: dsn} }
}
