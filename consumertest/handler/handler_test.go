package handler_test

import (
	"context"
	"database/sql"
	"errors"
	"io"
	"testing"

	"github.com/idemcheck/idemcheck/consumertest"
	"github.com/idemcheck/idemcheck/consumertest/handler"
	contract "github.com/idemcheck/idemcheck/impl/contract/handler"
)

// The handler's names are the contract's: a handler written against one
// is a handler of the other, and the answers mean the same.
func TestTheHandlersNamesAreTheContracts(t *testing.T) {
	var h handler.Handler = func(ctx context.Context, db *sql.DB, m handler.Message) error {
		if m.Poisoned() {
			return handler.Poison(errors.New("no amount"))
		}
		handler.Point(ctx, "cache SET "+m.EventID)
		return nil
	}
	f := contract.Func(h) // the same type: a conversion that changes nothing
	w := handler.Worker(func(string, *sql.DB) (contract.Func, io.Closer, error) { return f, nil, nil })
	_ = consumertest.Consumer{Handler: h, Worker: w}

	err := f(context.Background(), nil, contract.Message{EventID: "e1", Event: handler.OrderPaid{AmountCents: 0}})
	if !contract.IsPoison(err) || !handler.IsPoison(err) || !errors.Is(err, handler.ErrPoison) || !errors.Is(err, contract.ErrPoison) {
		t.Errorf("handler.Poison is not the contract's poison: %v", err)
	}
	var points []string
	ctx := contract.WithPoint(contract.WithDatabase(context.Background(), "sqlite"), func(what string) { points = append(points, what) })
	if err := f(ctx, nil, handler.Message{EventID: "e2", Event: handler.OrderPaid{AmountCents: 100}}); err != nil {
		t.Fatal(err)
	}
	if len(points) != 1 || points[0] != "cache SET e2" {
		t.Errorf("handler.Point reached the hook with %q", points)
	}
	if got := handler.Database(ctx); got != "sqlite" {
		t.Errorf("handler.Database = %q", got)
	}
}

// A handler of the team's own message type sees the message msg made of
// the harness's, and a worker of such handlers keeps its closer and its
// error.
func TestHandlerOfAndWorkerOfAdaptTheTeamsMessage(t *testing.T) {
	type own struct{ ID string }
	var got []string
	h := handler.HandlerOf(func(m handler.Message) own { return own{ID: "own-" + m.EventID} },
		func(_ context.Context, _ *sql.DB, m own) error { got = append(got, m.ID); return nil })
	if err := h(context.Background(), nil, handler.Message{EventID: "e1"}); err != nil || len(got) != 1 || got[0] != "own-e1" {
		t.Errorf("HandlerOf: err %v, messages %q", err, got)
	}
	boom := errors.New("no worker")
	w := handler.WorkerOf(func(m handler.Message) own { return own{ID: m.EventID} },
		func(id string, _ *sql.DB) (func(context.Context, *sql.DB, own) error, io.Closer, error) {
			if id == "w2" {
				return nil, nil, boom
			}
			return func(_ context.Context, _ *sql.DB, m own) error { got = append(got, id+":"+m.ID); return nil }, nil, nil
		})
	if _, _, err := w("w2", nil); !errors.Is(err, boom) {
		t.Errorf("WorkerOf lost the factory's error: %v", err)
	}
	wh, _, err := w("w1", nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := wh(context.Background(), nil, handler.Message{EventID: "e2"}); err != nil || got[len(got)-1] != "w1:e2" {
		t.Errorf("WorkerOf: err %v, messages %q", err, got)
	}
}
