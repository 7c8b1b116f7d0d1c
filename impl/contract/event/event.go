// Package event defines the domain events and their wire encoding.
package event

import (
	"encoding/json"
	"fmt"
)

// OrderPaid is the event the crediting consumer handles.
type OrderPaid struct {
	EventID      string `json:"eventId"`
	OccurredAtMs int64  `json:"occurredAt"`
	Tenant       string `json:"tenant"`
	OrderID      string `json:"orderId"`
	UserID       string `json:"userId"`
	AmountCents  int64  `json:"amountCents"`
}

// Encode returns the wire form of e.
func (e OrderPaid) Encode() []byte {
	b, err := json.Marshal(e)
	if err != nil { // a struct of strings and integers always marshals
		panic(err)
	}
	return b
}

// DecodeOrderPaid parses the wire form.
func DecodeOrderPaid(b []byte) (OrderPaid, error) {
	var e OrderPaid
	if err := json.Unmarshal(b, &e); err != nil {
		return OrderPaid{}, fmt.Errorf("decode OrderPaid: %w", err)
	}
	if e.EventID == "" {
		return OrderPaid{}, fmt.Errorf("decode OrderPaid: empty eventId")
	}
	return e, nil
}
