// Package handler is the contract of a team's own consumer: the function a
// team already runs in production, receiving one delivered message and a
// database, and answering success, a transient error or a poison error.
//
// The harness (package consumertest) plays the at-least-once broker around
// it. How the answer is applied:
//
//   - nil: the delivery is acked;
//   - an error wrapping ErrPoison (see Poison): the message is sent to the
//     dead-letter queue at once, with the error text as last_error;
//   - any other error: transient; the delivery is nacked, redelivered after
//     the policy's backoff, and dead-lettered once max_attempts is reached.
//
// Teams classify their own errors by wrapping: a decode failure or a
// business-rule rejection is Poison(err); a lock timeout, a serialization
// failure or a lost connection is returned as is.
package handler

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"

	"github.com/idemcheck/idemcheck/impl/contract/event"
)

// Message is one delivery of an OrderPaid event, with the broker's metadata.
type Message struct {
	// EventID is the event's identity, the key a consumer dedupes on.
	EventID string
	// Event holds the OrderPaid fields (user, order, amount, tenant, time).
	Event event.OrderPaid
	// Topic and Group name the stream and the consumer group delivering it.
	Topic string
	Group string
	// Tenant and IdempotencyKey are the message headers a producer set; the
	// key equals EventID unless a producer chose otherwise.
	Tenant         string
	IdempotencyKey string
	// Attempts counts deliveries of this message to this group, this one
	// included (the first delivery is 1).
	Attempts int
	// LastError is the error text of the previous attempt, empty on the first.
	LastError string
}

// Poisoned reports whether the harness made m a poison message: one that
// can never succeed, which a consumer must dead-letter (handler.Poison)
// and never apply. The harness's poison events carry an amount of zero; a
// team that converts m into a message type of its own makes these the
// messages its consumer rejects (a body that does not decode, a business
// rule that refuses it).
func (m Message) Poisoned() bool { return m.Event.AmountCents <= 0 }

// Func is a team's handler, unchanged from production. db is the harness's
// database handle (a wrapping driver makes every call a scheduling point).
type Func func(ctx context.Context, db *sql.DB, m Message) error

// Worker builds the handler one worker runs, as a service builds its
// consumer at start-up: db is the worker's database handle, the same one
// its handler is given, for the life of the worker (a store or a library
// that keeps the handle, creates its tables on first use or starts a
// clean-up goroutine is built here). A consumer with per-process state (an
// in-memory LRU, a child process) is given as a Worker: the harness calls
// it when a worker starts and again when a crashed worker restarts, after
// closing what the crashed one returned. The Closer may be nil.
type Worker func(id string, db *sql.DB) (Func, io.Closer, error)

// FreshWorkers is what the Closer a Worker returns implements when the
// Worker reuses, from one scenario to the next, something the harness
// cannot see into (a pool of processes reset between scenarios):
// FreshWorker returns a Worker that reuses nothing, or nil when nothing
// was reused. Before it reports a counterexample, the harness plays it
// again on fresh workers: state kept across scenarios, which a reset was
// meant to drop, never makes a verdict.
type FreshWorkers interface {
	FreshWorker() Worker
}

// ErrPoison marks an error as permanent: the message can never succeed and
// goes to the dead-letter queue without further attempts.
var ErrPoison = errors.New("poison message")

// Poison wraps err as a permanent failure.
func Poison(err error) error {
	if err == nil {
		return ErrPoison
	}
	return fmt.Errorf("%w: %w", ErrPoison, err)
}

// IsPoison reports whether err was marked permanent.
func IsPoison(err error) bool { return errors.Is(err, ErrPoison) }

// pointKey is the context key under which the harness installs its
// scheduling hook.
type pointKey struct{}

// WithPoint returns a context whose Point calls go to fn. The harness uses it
// to make a handler's non-database calls (Redis, HTTP, a cache) scheduling
// and crash points, as its wrapping database driver does for SQL.
func WithPoint(ctx context.Context, fn func(what string)) context.Context {
	return context.WithValue(ctx, pointKey{}, fn)
}

// Point marks a call to an outside system that the harness should treat as a
// scheduling point: another worker may run first, time may advance, or the
// worker may crash here (Point then never returns). what names the call for
// the trace, for example "redis SET order-1 NX". Outside the harness, or when
// ctx carries no hook, Point does nothing, so production code may call it
// unconditionally.
func Point(ctx context.Context, what string) {
	if fn, ok := ctx.Value(pointKey{}).(func(string)); ok && fn != nil {
		fn(what)
	}
}

// databaseKey is the context key under which the harness names its
// database.
type databaseKey struct{}

// WithDatabase returns a context that names the database the handler's
// *sql.DB reaches: "sqlite" or "postgres". The harness sets it on every
// delivery, so that code whose SQL depends on the database (its
// placeholders, an upsert's syntax) can tell without a query.
func WithDatabase(ctx context.Context, name string) context.Context {
	return context.WithValue(ctx, databaseKey{}, name)
}

// Database names the database of the delivery in ctx ("sqlite",
// "postgres", "mysql"), or "" when ctx carries none (outside the harness).
func Database(ctx context.Context) string {
	name, _ := ctx.Value(databaseKey{}).(string)
	return name
}
