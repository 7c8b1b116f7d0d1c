package consumerharness

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"strings"

	teamhandler "github.com/idemcheck/idemcheck/consumertest/handler"
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
	// by semicolons (outside quotes, comments, dollar-quoted bodies and
	// trigger bodies, as internal/sqlscan reads them).
	Schema string
	// Setup, when set, brings the fresh database to the team's schema by
	// code, after Schema: migrations run by code, a library's
	// CreateSchema. Its statements follow the scenario's clock as
	// Schema's do (a column DEFAULT CURRENT_TIMESTAMP reads the
	// scenario's time). Like Schema it runs before any worker starts, and
	// each scenario starts from the state they left.
	Setup func(ctx context.Context, db *sql.DB) error
	// Handler is the team's handler, unchanged from production. Give
	// either Handler or Worker.
	Handler Handler
	// Worker builds the handler one worker runs, for consumers with state
	// in their process (an in-memory cache of event ids, say): it is
	// called when a worker starts and again when a crashed worker
	// restarts, after the Closer of the crashed one was closed.
	Worker Worker
	// PgxHandler is a handler written against pgx rather than
	// database/sql: give it instead of Handler and Worker, with the
	// Postgres option. Each worker gets a *pgxpool.Pool of its own on the
	// scenario's database (a new one when it restarts after a crash), and
	// every query, exec, batch and copy of it — BEGIN, COMMIT
	// and ROLLBACK among them — is a scheduling and crash point, as a
	// database/sql handler's calls are. The transactions of different
	// workers do not overlap: a worker's call waits while another
	// worker's transaction is open (see docs/consumers.md, "pgx").
	PgxHandler teamhandler.PgxHandler
	// Log is a consumer of a log broker (Kafka's model: partitions,
	// offsets, a consumer group and its rebalances), given instead of
	// Handler, Worker and PgxHandler. Its scenarios have partitions and
	// rebalances; see docs/consumers.md, "On a log broker".
	Log *teamhandler.LogConsumer
	// Effects reads what the consumer did; the invariants are judged from
	// its rows. See PerEvent and Aggregate.
	Effects Effects
	// Dedupe, when set, reads the consumer's dedupe records: a query whose
	// first column is the event id, one row per event marked processed.
	// It switches the atomicity law on: effect and mark land together.
	Dedupe string
	// DeadLetters, when set, reads the consumer's own dead-letter records,
	// for a consumer that keeps its own retry count and dead-letter table
	// and acks what it dead-letters: a query whose first column is the
	// event id, one row per event dead-lettered. The laws count those
	// events as dead-lettered, as if the broker had: a healthy event may
	// sit there only when the harness's faults hit as many of its
	// deliveries as the broker's policy would have retried
	// (max_attempts - 1) and the consumer gave up on none of them by
	// itself; a poison event must be there (or in the broker's), never
	// applied.
	DeadLetters string
	// EventIDs, when set, names the n-th event a scenario produces (n
	// from 1): the id its messages carry (handler.Message.EventID and the
	// key) and that the effects, dedupe and dead-letter queries are keyed
	// by. A consumer that parses its ids (as UUIDs, say) gives them here;
	// by default they are e1, e2, ... Scenarios, traces and corpus files
	// carry these ids.
	EventIDs func(n int) string
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
	if c.PgxHandler != nil {
		return pgxFactory(c.PgxHandler)
	}
	if c.Log != nil {
		return logFactory(c.Log)
	}
	h := c.Handler
	return func(string, *sql.DB) (handler.Func, io.Closer, error) { return h, nil, nil }
}

// validate reports what is missing from c.
func (c Consumer) validate() error {
	var errs []string
	switch n := countSet(c.Handler != nil, c.Worker != nil, c.PgxHandler != nil, c.Log != nil); {
	case n == 0:
		errs = append(errs, "give a Handler or a Worker (or a PgxHandler, or a Log)")
	case n > 1:
		errs = append(errs, "give one of Handler, Worker, PgxHandler and Log, not several")
	}
	if c.Log != nil {
		if c.Log.Assigned == nil || c.Log.Handle == nil {
			errs = append(errs, "give the Log consumer both Assigned and Handle")
		}
		if c.Log.MaxBatch < 0 || c.Log.AutoCommit < 0 {
			errs = append(errs, "the Log consumer's MaxBatch and AutoCommit are 0 or more")
		}
		if c.Log.Ordered && c.Effects.Aggregate {
			errs = append(errs, "an Ordered Log consumer is judged from the order of its effects' rows: give PerEvent effects")
		}
	}
	if strings.TrimSpace(c.Effects.Query) == "" {
		errs = append(errs, "give an Effects query (PerEvent or Aggregate)")
	}

	if len(errs) > 0 {
		return fmt.Errorf("consumertest: consumer %q: %s", c.displayName(), strings.Join(errs, "; "))
	}
	return nil
}

// countSet counts the true values.
func countSet(bs ...bool) int {
	n := 0
	for _, b := range bs {
		if b {
			n++
		}
	}
	return n
}

func (c Consumer) displayName() string { return displayOr(c.Name) }

// named gives s's events the ids c.EventIDs makes, in place: by index, so
// that a scenario named already is named the same again.
func (c Consumer) named(s *Scenario) {
	if c.EventIDs == nil {
		return
	}
	renamed := map[string]string{}
	for i := range s.Events {
		id := c.EventIDs(i + 1)
		renamed[s.Events[i].ID] = id
		s.Events[i].ID = id
	}
	for i := range s.Events {
		if p := s.Events[i].Payload; p != "" {
			if id, ok := renamed[p]; ok {
				s.Events[i].Payload = id
			}
		}
	}
}

// checkIDs reports EventIDs that do not name 8 events apart.
func (c Consumer) checkIDs() error {
	if c.EventIDs == nil {
		return nil
	}
	seen := map[string]int{}
	for n := 1; n <= 8; n++ {
		id := c.EventIDs(n)
		if id == "" {
			return fmt.Errorf("%w: consumer %q: EventIDs(%d) is empty", ErrBadInput, c.displayName(), n)
		}
		if m, ok := seen[id]; ok {
			return fmt.Errorf("%w: consumer %q: EventIDs(%d) and EventIDs(%d) are both %q", ErrBadInput, c.displayName(), m, n, id)
		}
		seen[id] = n
	}
	return nil
}

// ErrBadInput marks errors about what the team gave (a schema that fails,
// an effects query that fails): no scenario could be judged.
var ErrBadInput = errors.New("consumertest: bad input")
