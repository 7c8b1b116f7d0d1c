package consumertest

import (
	"database/sql"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/idemcheck/idemcheck/impl/contract/handler"
)

// Consumer is a team's consumer as written: its schema, its handler (or a
// Worker that builds one per worker process), and the queries that read
// what it did.
type Consumer struct {
	// Name names the consumer in reports and corpus files.
	Name string
	// Schema is SQL run on the fresh database at the start of every
	// scenario: tables, constraints, seed rows. Statements are separated
	// by semicolons.
	Schema string
	// Handler is the team's handler, unchanged from production. Give
	// either Handler or Worker.
	Handler handler.Func
	// Worker builds the handler one worker runs, for consumers with state
	// in their process (an in-memory cache of event ids, say): it is
	// called when a worker starts and again when a crashed worker
	// restarts, after the Closer of the crashed one was closed.
	Worker handler.Worker
	// Effects reads what the consumer did; the invariants are judged from
	// its rows. See PerEvent and Aggregate.
	Effects Effects
	// Dedupe, when set, reads the consumer's dedupe records: a query whose
	// first column is the event id, one row per event marked processed.
	// It switches the atomicity law on: effect and mark land together.
	Dedupe string
	// Lingering, when set, says why goroutines the consumer or its
	// libraries start outlive the workers (an expiry ticker started for
	// the life of the process, with no way to stop it): they are then
	// tolerated when a scenario ends. Empty, a goroutine still running
	// once every worker was stopped (its Closer closed) is a breach of
	// law runs, reported with its stack and who started it.
	Lingering string
}

// Effects is the effects query and its shape.
type Effects struct {
	// Query is the SQL that reads the effects.
	Query string
	// Aggregate is true when each row is (user id, total cents) rather
	// than one row per applied event.
	Aggregate bool
}

// PerEvent reads effects as one row per applied event, the event id in the
// first column (any further columns are shown in reports), for example
// "SELECT event_id, amount_cents FROM ledger". An event applied twice shows
// as two rows with its id.
func PerEvent(query string) Effects { return Effects{Query: query} }

// Aggregate reads effects as state: rows of (user id, total cents), for
// example "SELECT user_id, balance_cents FROM accounts" for a consumer that
// runs balance = balance + amount. The harness reads them once after the
// schema ran (the starting state) and expects each user's total to grow by
// the amounts of that user's events applied exactly once.
func Aggregate(query string) Effects { return Effects{Query: query, Aggregate: true} }

// worker returns the factory the harness calls for each worker.
func (c Consumer) worker() handler.Worker {
	if c.Worker != nil {
		return c.Worker
	}
	h := c.Handler
	return func(string, *sql.DB) (handler.Func, io.Closer, error) { return h, nil, nil }
}

// validate reports what is missing from c.
func (c Consumer) validate() error {
	var errs []string
	if c.Handler == nil && c.Worker == nil {
		errs = append(errs, "give a Handler or a Worker")
	}
	if c.Handler != nil && c.Worker != nil {
		errs = append(errs, "give a Handler or a Worker, not both")
	}
	if strings.TrimSpace(c.Effects.Query) == "" {
		errs = append(errs, "give an Effects query (PerEvent or Aggregate)")
	}
	if len(errs) > 0 {
		return fmt.Errorf("consumertest: consumer %q: %s", c.displayName(), strings.Join(errs, "; "))
	}
	return nil
}

func (c Consumer) displayName() string {
	if c.Name == "" {
		return "consumer"
	}
	return c.Name
}

// ErrBadInput marks errors about what the team gave (a schema that fails,
// an effects query that fails): no scenario could be judged.
var ErrBadInput = errors.New("consumertest: bad input")
