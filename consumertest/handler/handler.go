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
// type: a production package may import it without linking the harness
// (and with it package testing and the SQLite and PostgreSQL drivers).
package handler

import (
	"context"
	"database/sql"
	"errors"
	"io"

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

// Worker builds the handler one worker runs, for a consumer with state in
// its process (consumertest.Consumer.Worker): the contract's Worker.
type Worker = contract.Worker

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

// HandlerOf adapts a handler of the team's own message type M (a struct
// it decodes, the bytes and headers of its broker's client, a message of
// its framework): msg makes the message each delivery carries from the
// harness's, as the team's producer would publish it. Effects are keyed
// by the event's id: put m.EventID where the producer puts its message's
// id.
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
