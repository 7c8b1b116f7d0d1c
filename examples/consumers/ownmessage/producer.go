package ownmessage

import (
	"encoding/json"
	"fmt"

	"github.com/idemcheck/idemcheck/impl/contract/handler"
)

// Publish is the producer's side: the delivery the broker hands the
// consumer for payment p, published under message-id id.
func Publish(id string, p OrderPaid) Delivery {
	body, err := json.Marshal(p)
	if err != nil {
		panic(err) // OrderPaid always encodes
	}
	return Delivery{
		Key:     []byte(p.Account),
		Headers: map[string]string{HeaderMessageID: id, HeaderContentType: ContentType},
		Body:    body,
	}
}

// FromHarness is the delivery for the harness's message m, for
// consumertest.HandlerOf: the event's id is the message-id, its payload the
// body; a message the harness poisoned is published with a body cut short,
// which never decodes.
func FromHarness(m handler.Message) Delivery {
	d := Publish(m.EventID, OrderPaid{OrderID: m.Event.OrderID, Account: m.Event.UserID, AmountCents: m.Event.AmountCents})
	if m.Poisoned() {
		d.Body = d.Body[:len(d.Body)/2]
	}
	return d
}

// EventID is the n-th event's message-id, a UUID, for
// consumertest.Consumer.EventIDs.
func EventID(n int) string { return fmt.Sprintf("6f1c2a4e-93b7-4d0a-8c15-%012x", n) }
