package consumerharness

import (
	"context"

	"github.com/idemcheck/idemcheck/impl/contract/event"
	"github.com/idemcheck/idemcheck/impl/contract/handler"
)

// The handler's contract, inside the harness. The harness names the
// delivered message and the answers with these short names; a team names
// them from package consumertest/handler, whose types are the same
// (aliases of package impl/contract/handler's, as these are), so that a
// value of one is a value of the other.

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

// Database names the database of the delivery in ctx, "sqlite",
// "postgres" or "mysql", or "" outside the harness (handler.Database).
func Database(ctx context.Context) string { return handler.Database(ctx) }
