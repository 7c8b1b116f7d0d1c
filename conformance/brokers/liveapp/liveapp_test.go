package liveapp_test

import (
	"context"
	"database/sql"
	"errors"
	"io"
	"slices"
	"testing"

	"github.com/idemcheck/idemcheck/conformance/brokers/liveapp"
	"github.com/idemcheck/idemcheck/consumertest"
	"github.com/idemcheck/idemcheck/faults/runner"
	"github.com/idemcheck/idemcheck/impl/contract/broker"
	"github.com/idemcheck/idemcheck/impl/contract/event"
	"github.com/idemcheck/idemcheck/impl/contract/handler"
)

func msg(id string, amount int64) broker.Message {
	return broker.Message{Topic: "orders", Group: "ledger", Key: id, Attempts: 1,
		Payload: event.OrderPaid{EventID: id, UserID: "u1", OrderID: "o1", AmountCents: amount}.Encode()}
}

// TestHandlerAnswersAndEffects: the handler's answers become ack, poison
// and transient results, a panic is a transient failure, the effects query
// is the ledger, and a crash builds the worker again.
func TestHandlerAnswersAndEffects(t *testing.T) {
	starts := 0
	c := consumertest.Consumer{
		Name:   "inline",
		Schema: "CREATE TABLE ledger (event_id TEXT NOT NULL, amount_cents INTEGER NOT NULL)",
		Worker: func(string, *sql.DB) (handler.Func, io.Closer, error) {
			starts++
			return func(ctx context.Context, db *sql.DB, m handler.Message) error {
				switch {
				case m.Event.AmountCents <= 0:
					return handler.Poison(errors.New("bad amount"))
				case m.EventID == "boom":
					panic("boom")
				case m.EventID == "flaky":
					return errors.New("lock timeout")
				}
				_, err := db.ExecContext(ctx, "INSERT INTO ledger VALUES (?, ?)", m.EventID, m.Event.AmountCents)
				return err
			}, nil, nil
		},
		Effects: consumertest.PerEvent("SELECT event_id FROM ledger ORDER BY rowid"),
	}
	newApp, err := liveapp.New(c)
	if err != nil {
		t.Fatal(err)
	}
	app, err := newApp()
	if err != nil {
		t.Fatal(err)
	}
	defer app.Close()
	g, err := app.Group(t.Context(), "ledger")
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		m    broker.Message
		kind string
	}{
		{msg("e1", 100), ""}, {msg("e2", 0), runner.AppPoison}, {msg("flaky", 100), runner.AppTransient},
		{msg("boom", 100), runner.AppTransient}, {msg("e1", 100), ""},
	}
	for _, tc := range cases {
		if got := g.Handle(t.Context(), tc.m); got.Kind != tc.kind {
			t.Errorf("%s: %+v, want kind %q", tc.m.Key, got, tc.kind)
		}
	}
	if err := g.Crash(); err != nil || starts != 2 {
		t.Fatalf("crash: %v, worker started %d times, want 2", err, starts)
	}
	if got := g.Handle(t.Context(), msg("e3", 100)); got.Kind != "" {
		t.Fatalf("after the crash: %+v", got)
	}
	ids, err := g.Credited(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"e1", "e1", "e3"}; !slices.Equal(ids, want) {
		t.Fatalf("effects %v, want %v (the database outlives the crash)", ids, want)
	}
}

// TestRefusals: what a live run cannot judge is refused at once.
func TestRefusals(t *testing.T) {
	h := func(context.Context, *sql.DB, handler.Message) error { return nil }
	for _, c := range []consumertest.Consumer{
		{Effects: consumertest.PerEvent("SELECT 1")},
		{Handler: h},
		{Handler: h, Effects: consumertest.Aggregate("SELECT user_id, total FROM t")},
	} {
		if _, err := liveapp.New(c); err == nil {
			t.Errorf("%+v was accepted", c.Effects)
		}
	}
	bad := consumertest.Consumer{Handler: h, Schema: "CREATE NONSENSE", Effects: consumertest.PerEvent("SELECT 1")}
	newApp, err := liveapp.New(bad)
	if err != nil {
		t.Fatal(err)
	}
	app, _ := newApp()
	defer app.Close()
	if _, err := app.Group(t.Context(), "ledger"); !errors.Is(err, consumertest.ErrBadInput) {
		t.Fatalf("a failing schema: %v, want bad input", err)
	}
}
