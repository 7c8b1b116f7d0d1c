package consumerharness

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/idemcheck/idemcheck/internal/consumerharness/backend"
	"github.com/idemcheck/idemcheck/internal/consumerharness/sqlhook"
)

// PostgresEnv names the environment variable that conventionally holds the
// PostgreSQL connection string for Postgres, for example
// postgres://postgres@127.0.0.1:5432/test?sslmode=disable.
const PostgresEnv = "IDEMCHECK_POSTGRES_DSN"

// Postgres plays every scenario on PostgreSQL at dsn (a pgx connection
// string) instead of the embedded SQLite. Each Check, Hunt or Replay gets
// databases of its own, dropped when it ends (or, if its process is
// killed, by the next run's start), so that whatever the team's schema
// makes, in any schema, stays in the run; the schema runs once, and later
// scenarios start from the same state, restored (rows deleted, seeded rows
// put back, sequences set back, objects a scenario made dropped) rather
// than made again. The role needs CREATEDB; a superuser's runs are the
// fast ones. A statement that would make or change what belongs to the
// whole server (a role, an extension, a database, a tablespace) is bad
// input. See the package documentation, "PostgreSQL", for the isolation,
// lock waits and what is reproducible there.
func Postgres(dsn string) Option {
	return func(c *config) { c.backend = backend.Postgres{DSN: dsn} }
}

// start starts c's backend for one run when it keeps state across
// scenarios, and returns what ends the run.
func (c *config) start() (func(), error) {
	st, ok := c.backend.(backend.Starter)
	if !ok {
		return func() {}, nil
	}
	s, err := st.Start(context.Background())
	if err != nil {
		return nil, fmt.Errorf("%w: start the %s backend: %w", ErrBadInput, c.backend.Name(), err)
	}
	c.backend = s
	return func() { _ = s.Close() }, nil
}

// prepareSchema brings db to the state the team's schema makes: its
// Schema, then its Setup.
func prepareSchema(ctx context.Context, db backend.Database, c Consumer) error {
	rw := rewriter(db)
	run := func(admin *sql.DB) error {
		if err := runSchema(ctx, admin, c.Schema, rw); err != nil {
			return err
		}
		return runSetup(ctx, db, c)
	}
	if p, ok := db.(backend.Preparer); ok {
		err := p.Prepare(ctx, run)
		// A statement a worker ran that the backend refused (the schema's
		// own are bad input already).
		var r *backend.Refused
		if errors.As(err, &r) && !errors.Is(err, ErrBadInput) {
			err = fmt.Errorf("%w: %w", ErrBadInput, err)
		}
		return err
	}
	return run(db.Admin())
}

// runSetup runs the team's Setup on a handle of its own whose statements
// are rewritten onto the scenario's clock, as the schema's are.
func runSetup(ctx context.Context, db backend.Database, c Consumer) error {
	if c.Setup == nil {
		return nil
	}
	h := sql.OpenDB(sqlhook.NewConnector(db.Open, direct{}, db.IsBusy, clockedOpts(db)...))
	defer h.Close()
	if err := c.Setup(ctx, h); err != nil {
		return fmt.Errorf("%w: the Setup of consumer %q failed: %w", ErrBadInput, c.displayName(), err)
	}
	return nil
}

// clockedOpts are the options of a handle on db whose statements are
// rewritten onto the scenario's clock, when db follows it.
func clockedOpts(db backend.Database) []sqlhook.Option {
	if cl, ok := db.(backend.Clocked); ok {
		return []sqlhook.Option{sqlhook.WithRewriter(cl)}
	}
	return nil
}

// direct is the hook of a handle whose calls are no scheduling points.
type direct struct{}

func (direct) Before(sqlhook.Call) error            { return nil }
func (direct) Busy(_ sqlhook.Call, err error) error { return err }

// rewriter returns what points the statements the harness runs on db at
// the scenario's clock (see backend.Clocked).
func rewriter(db backend.Database) func(string) (string, []string) {
	if c, ok := db.(backend.Clocked); ok {
		return c.Rewrite
	}
	return func(q string) (string, []string) { return q, nil }
}
