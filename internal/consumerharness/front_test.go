package consumerharness_test

import (
	"context"
	"database/sql"
	"errors"
	"io"
	"testing"

	"github.com/idemcheck/idemcheck/impl/contract/handler"
	consumertest "github.com/idemcheck/idemcheck/internal/consumerharness"
)

// The front door's names are package handler's: a handler written against
// one is a handler of the other, and the answers mean the same.
func TestTheFrontDoorIsTheHandlersContract(t *testing.T) {
	var h consumertest.Handler = func(ctx context.Context, db *sql.DB, m consumertest.Message) error {
		if m.Poisoned() {
			return consumertest.Poison(errors.New("no amount"))
		}
		consumertest.Point(ctx, "cache SET "+m.EventID)
		return nil
	}
	f := handler.Func(h) // the same type: a conversion that changes nothing
	w := consumertest.Worker(func(string, *sql.DB) (handler.Func, io.Closer, error) { return f, nil, nil })
	_ = consumertest.Consumer{Worker: w}

	err := f(context.Background(), nil, handler.Message{EventID: "e1", Event: consumertest.OrderPaid{AmountCents: 0}})
	if !handler.IsPoison(err) || !consumertest.IsPoison(err) || !errors.Is(err, consumertest.ErrPoison) || !errors.Is(err, handler.ErrPoison) {
		t.Errorf("consumertest.Poison is not handler's poison: %v", err)
	}
	var points []string
	ctx := handler.WithPoint(handler.WithDatabase(context.Background(), "sqlite"), func(what string) { points = append(points, what) })
	if err := f(ctx, nil, consumertest.Message{EventID: "e2", Event: consumertest.OrderPaid{AmountCents: 100}}); err != nil {
		t.Fatal(err)
	}
	if len(points) != 1 || points[0] != "cache SET e2" {
		t.Errorf("consumertest.Point reached the hook with %q", points)
	}
	if got := consumertest.Database(ctx); got != "sqlite" {
		t.Errorf("consumertest.Database = %q", got)
	}
}
