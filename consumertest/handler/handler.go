// Package handler is what a team's handler needs to run under
// consumertest: the message it is delivered, the answers it gives, and
// the two hooks into the harness (Point and Database).
//
//	func Handle(ctx context.Context, db *sql.DB, m handler.Message) error {
//		if m.Poisoned() {
//			return handler.Poison(fmt.Errorf("order %s: amount %d", m.Event.OrderID, m.Event.AmountCents))
//		}
//		...
//	}
//
// Its types are those of package impl/contract/handler under the front
// door's path: aliases, so that a value of one is a value of the other
// and a handler written against either is passed to consumertest.Check
// unchanged. Like that package, it depends on nothing but the event's
// type and pgx's pool (for PgxHandler): a production package may import
// it without linking the harness (and with it package testing and the
// SQLite driver).
package handler

import (
	"context"
	"database/sql"
	"errors"
	"io"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/idemcheck/idemcheck/impl/contract/event"
	contract "github.com/idemcheck/idemcheck/impl/contract/handler"
)

// Message is one delivery of an OrderPaid event, with the broker's
// metadata: the contract's Message.
type Message = contract.Message

// OrderPaid is the event a Message carries (Message.Event).
type OrderPaid = event.OrderPaid

// Handler is a team's handler, unchanged from production
// (consumertest.Consumer.Handler): the contract's Func. Return nil to
// ack, Poison(err) for a message that can never succeed, any other error
// for a transient failure.
type Handler = contract.Func

// PgxHandler is a team's handler written against pgx rather than
// database/sql (consumertest.Consumer.PgxHandler), unchanged from
// production: each worker runs it on a pool of its own, on the scenario's
// PostgreSQL database. Return what Handler returns.
type PgxHandler func(ctx context.Context, pool *pgxpool.Pool, m Message) error

// Worker builds the handler one worker runs, for a consumer with state in
// its process (consumertest.Consumer.Worker): the contract's Worker.
type Worker = contract.Worker

// FreshWorkers is what a Worker's Closer implements when the Worker reuses
// something across scenarios (consumerproc's pool): the contract's
// FreshWorkers.
type FreshWorkers = contract.FreshWorkers

// ErrPoison marks an error as permanent (see Poison).
var ErrPoison = contract.ErrPoison

// ErrInjected is the error of a call the harness made fail, as a lost
// connection does (a scenario's fail step, a verification's injected
// failure). It is declared here, beside the handler's other answers, so
// that a handler or its test can tell it from a failure of its own
// without linking the harness.
var ErrInjected = errors.New("consumertest: injected transient failure (connection lost)")

// Poison wraps err as a permanent failure: the message goes to the
// dead-letter queue at once, with the error text as last_error.
func Poison(err error) error { return contract.Poison(err) }

// IsPoison reports whether err was marked permanent.
func IsPoison(err error) bool { return contract.IsPoison(err) }

// Point marks a call to an outside system (Redis, HTTP, a cache) as a
// scheduling and crash point of the harness, as every database call is;
// what names the call in the trace. Outside the harness it does nothing.
func Point(ctx context.Context, what string) { contract.Point(ctx, what) }

// Database names the database of the delivery in ctx, "sqlite" or
// "postgres", or "" outside the harness.
func Database(ctx context.Context) string { return contract.Database(ctx) }

// A team's own message type.
//
// The harness delivers a Message: the event's id (the one the laws judge
// by, see consumertest.Consumer.EventIDs), its payload (an OrderPaid:
// user, order, amount), the broker's metadata (attempt, last error, key,
// tenant) and whether the harness made it a poison message (Poisoned). A
// consumer that takes a message type of its own — a struct it decodes,
// the bytes and headers of its broker's client, a *message.Message of its
// framework — is put under the harness unchanged through HandlerOf or
// WorkerOf, with a function that makes its message from the harness's, as
// its producer would publish it:
//
//	Handler: handler.HandlerOf(func(m handler.Message) payments.Event {
//		if m.Poisoned() {
//			return payments.Event{ID: m.EventID} // no account: the consumer rejects it
//		}
//		return payments.Event{ID: m.EventID, Account: m.Event.UserID, Cents: m.Event.AmountCents}
//	}, svc.Handle),
//
// Effects are keyed by the event's id: put m.EventID where the team's
// producer puts its message's id. The payloads of two distinct events may
// be equal (a payload collision: the generator draws them, and Verify's
// fate "same" makes one); a consumer that dedupes on its payload rather
// than its id loses one of them.

// HandlerOf adapts a handler of the team's own message type M: msg makes
// the message each delivery carries, from the harness's.
func HandlerOf[M any](msg func(Message) M, h func(ctx context.Context, db *sql.DB, m M) error) Handler {
	return func(ctx context.Context, db *sql.DB, m Message) error { return h(ctx, db, msg(m)) }
}

// WorkerOf adapts a Worker factory whose handlers take the team's own
// message type M: msg makes the message each delivery carries, from the
// harness's.
func WorkerOf[M any](msg func(Message) M, w func(id string, db *sql.DB) (func(ctx context.Context, db *sql.DB, m M) error, io.Closer, error)) Worker {
	return func(id string, db *sql.DB) (Handler, io.Closer, error) {
		h, closer, err := w(id, db)
		if err != nil || h == nil {
			return nil, closer, err
		}
		return HandlerOf(msg, h), closer, nil
	}
}
