package consumerharness_test

import (
	"context"
	"database/sql"
	"errors"
	"io"
	"testing"

	"github.com/idemcheck/idemcheck/impl/contract/handler"
	"github.com/idemcheck/idemcheck/internal/consumerharness"
)

// The front door's names are package handler's: a handler written against
// one is a handler of the other, and the answers mean the same.
func TestTheFrontDoorIsTheHandlersContract(t *testing.T) {
	var h consumerharness.Handler = func(ctx context.Context, db *sql.DB, m consumerharness.Message) error {
		if m.Poisoned() {
			return consumerharness.Poison(errors.New("no amount"))
		}
		consumerharness.Point(ctx, "cache SET "+m.EventID)
		return nil
	}
	f := handler.Func(h) // the same type: a conversion that changes nothing
	w := consumerharness.Worker(func(string, *sql.DB) (handler.Func, io.Closer, error) { return f, nil, nil })
	_ = consumerharness.Consumer{Worker: w}

	err := f(context.Background(), nil, handler.Message{EventID: "e1", Event: consumerharness.OrderPaid{AmountCents: 0}})
	if !handler.IsPoison(err) || !consumerharness.IsPoison(err) || !errors.Is(err, consumerharness.ErrPoison) || !errors.Is(err, handler.ErrPoison) {
		t.Errorf("consumerharness.Poison is not handler's poison: %v", err)
	}
	var points []string
	ctx := handler.WithPoint(handler.WithDatabase(context.Background(), "sqlite"), func(what string) { points = append(points, what) })
	if err := f(ctx, nil, consumerharness.Message{EventID: "e2", Event: consumerharness.OrderPaid{AmountCents: 100}}); err != nil {
		t.Fatal(err)
	}
	if len(points) != 1 || points[0] != "cache SET e2" {
		t.Errorf("consumerharness.Point reached the hook with %q", points)
	}
	if got := consumerharness.Database(ctx); got != "sqlite" {
		t.Errorf("consumerharness.Database = %q", got)
	}
}
