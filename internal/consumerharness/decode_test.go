package consumerharness

import (
	"testing"

	"github.com/idemcheck/idemcheck/impl/contract/event"
)

// TestProducedEventsReadBack: an event the run remembers with its payload
// is the one DecodeOrderPaid reads from that payload, and one it does not
// remember (invalid UTF-8, which JSON replaces) would not be.
func TestProducedEventsReadBack(t *testing.T) {
	for _, ev := range []event.OrderPaid{
		{EventID: "e1", OccurredAtMs: 1, OrderID: "o1", UserID: "u1", AmountCents: 100},
		{EventID: `e"<&>\`, Tenant: "t\n1", OrderID: "ö", UserID: "\u2028", AmountCents: -5},
		{EventID: "e\xff", OrderID: "o1", UserID: "u1"},
	} {
		got, err := event.DecodeOrderPaid(ev.Encode())
		if err != nil {
			t.Fatalf("%+v: %v", ev, err)
		}
		if same := got == ev; same != readBack(ev) {
			t.Errorf("%+v: decodes to %+v (the same: %t), readBack says %t", ev, got, same, readBack(ev))
		}
	}
	r := &run{}
	ev := event.OrderPaid{EventID: "e1", OrderID: "o1", UserID: "u1", AmountCents: 100}
	r.produced = append(r.produced, producedEvent{ev.Encode(), ev})
	other := event.OrderPaid{EventID: "e2", OrderID: "o2", UserID: "u1", AmountCents: 200}
	for _, want := range []event.OrderPaid{ev, other} {
		if got, err := r.decode(want.Encode()); err != nil || got != want {
			t.Errorf("decode %s: %+v, %v; want %+v", want.EventID, got, err, want)
		}
	}
	if _, err := r.decode([]byte("{")); err == nil {
		t.Error("decode of a payload that is not JSON: no error")
	}
}
