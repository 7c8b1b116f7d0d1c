package handler_test

import (
	"context"
	"errors"
	"testing"

	"github.com/idemcheck/idemcheck/impl/contract/handler"
)

func TestPointCallsTheInstalledHook(t *testing.T) {
	var got []string
	ctx := handler.WithPoint(context.Background(), func(what string) { got = append(got, what) })
	handler.Point(ctx, "redis SET k NX")
	handler.Point(context.Background(), "ignored: no hook")
	if len(got) != 1 || got[0] != "redis SET k NX" {
		t.Fatalf("hook saw %q, want exactly [redis SET k NX]", got)
	}
}

func TestPoisonIsRecognisedThroughWrapping(t *testing.T) {
	err := handler.Poison(errors.New("bad amount"))
	if !handler.IsPoison(err) || handler.IsPoison(errors.New("lock timeout")) {
		t.Fatal("IsPoison must see Poison through wrapping and nothing else")
	}
	if !handler.IsPoison(handler.Poison(nil)) {
		t.Fatal("Poison(nil) must still be poison")
	}
}

func TestDatabaseIsCarriedByTheContext(t *testing.T) {
	ctx := handler.WithDatabase(context.Background(), "postgres")
	if got := handler.Database(ctx); got != "postgres" {
		t.Errorf("Database = %q, want postgres", got)
	}
	if got := handler.Database(context.Background()); got != "" {
		t.Errorf("Database outside the harness = %q, want empty", got)
	}
}
