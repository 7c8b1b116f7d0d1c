package consumerharness

import (
	"context"
	"database/sql"
	"io"

	teamhandler "github.com/idemcheck/idemcheck/consumertest/handler"
)

// A team's own message type: HandlerOf and WorkerOf are declared in
// package consumertest/handler, where a team's test names them and where
// the ways of making a team's message from the harness's are told; these
// call them, for the harness's own tests.

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
