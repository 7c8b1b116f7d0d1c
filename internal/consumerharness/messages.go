package consumerharness

import (
	"context"
	"database/sql"
	"io"

	teamhandler "github.com/idemcheck/idemcheck/consumertest/handler"
)

// A team's own message type.
//
// The harness delivers a Message (handler.Message): the event's id (the one the laws
// judge by, see Consumer.EventIDs), its payload (an OrderPaid: user, order,
// amount), the broker's metadata (attempt, last error, key, tenant) and
// whether the harness made it a poison message (Poisoned). A consumer that
// takes a message type of its own — a struct it decodes, the bytes and
// headers of its broker's client, a *message.Message of its framework —
// is put under the harness unchanged through HandlerOf or WorkerOf, with
// a function that makes its message from the harness's, as its producer
// would publish it:
//
//	Handler: consumertest.HandlerOf(func(m consumertest.Message) payments.Event {
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
	return teamhandler.HandlerOf(msg, h)
}

// WorkerOf adapts a Worker factory whose handlers take the team's own
// message type M: msg makes the message each delivery carries, from the
// harness's.
func WorkerOf[M any](msg func(Message) M, w func(id string, db *sql.DB) (func(ctx context.Context, db *sql.DB, m M) error, io.Closer, error)) Worker {
	return teamhandler.WorkerOf(msg, w)
}
