package consumerharness

import (
	"context"

	"github.com/idemcheck/idemcheck/impl/contract/event"
	"github.com/idemcheck/idemcheck/impl/contract/handler"
)

// The handler's contract, at the front door. A team's handler and its test
// name the delivered message and the answers from here:
//
//	func Handle(ctx context.Context, db *sql.DB, m consumertest.Message) error {
//		if m.Poisoned() {
//			return consumertest.Poison(fmt.Errorf("order %s: amount %d", m.Event.OrderID, m.Event.AmountCents))
//		}
//		...
//	}
//
// These are package handler's (github.com/idemcheck/idemcheck/impl/contract/handler)
// under a second name: aliases of its types, and functions that call its
// own, so that a value of one is a value of the other and code that names
// handler's keeps compiling. Package handler depends on nothing but the
// event's type; a production package that must not link the harness (and
// with it package testing and the SQLite and PostgreSQL drivers) imports
// it instead, and its test passes the same handler to Check.

// Message is one delivery of an OrderPaid event, with the broker's
// metadata: handler.Message.
type Message = handler.Message

// OrderPaid is the event a Message carries (Message.Event): event.OrderPaid.
type OrderPaid = event.OrderPaid

// Handler is a team's handler, unchanged from production (Consumer.Handler):
// handler.Func. Return nil to ack, Poison(err) for a message that can never
// succeed, any other error for a transient failure.
type Handler = handler.Func

// Worker builds the handler one worker runs, for a consumer with state in
// its process (Consumer.Worker): handler.Worker.
type Worker = handler.Worker

// ErrPoison marks an error as permanent: handler.ErrPoison.
var ErrPoison = handler.ErrPoison

// Poison wraps err as a permanent failure: the message goes to the
// dead-letter queue at once, with the error text as last_error
// (handler.Poison).
func Poison(err error) error { return handler.Poison(err) }

// IsPoison reports whether err was marked permanent (handler.IsPoison).
func IsPoison(err error) bool { return handler.IsPoison(err) }

// Point marks a call to an outside system (Redis, HTTP, a cache) as a
// scheduling and crash point of the harness, as every database call is;
// what names the call in the trace. Outside the harness it does nothing
// (handler.Point).
func Point(ctx context.Context, what string) { handler.Point(ctx, what) }

// Database names the database of the delivery in ctx, "sqlite" or
// "postgres", or "" outside the harness (handler.Database).
func Database(ctx context.Context) string { return handler.Database(ctx) }
