// Package event defines the domain events and their wire encoding.
package event

import (
	"encoding/json"
	"fmt"
	"strconv"
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

// Encode returns the wire form of e: its JSON, as encoding/json writes it.
func (e OrderPaid) Encode() []byte {
	if plain(e.EventID) && plain(e.Tenant) && plain(e.OrderID) && plain(e.UserID) {
		// What encoding/json writes for strings that need no escaping,
		// without its reflection: a harness encodes an event per produce.
		b := make([]byte, 0, 96+len(e.EventID)+len(e.Tenant)+len(e.OrderID)+len(e.UserID))
		b = append(append(append(b, `{"eventId":"`...), e.EventID...), `","occurredAt":`...)
		b = append(append(strconv.AppendInt(b, e.OccurredAtMs, 10), `,"tenant":"`...), e.Tenant...)
		b = append(append(append(b, `","orderId":"`...), e.OrderID...), `","userId":"`...)
		b = append(append(b, e.UserID...), `","amountCents":`...)
		return append(strconv.AppendInt(b, e.AmountCents, 10), '}')
	}
	b, err := json.Marshal(e)
	if err != nil { // a struct of strings and integers always marshals
		panic(err)
	}
	return b
}

// plain reports whether encoding/json writes s as it is between quotes:
// printable ASCII but for the quote, the backslash and the characters it
// escapes for HTML.
func plain(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			return false
		}
	}
	return true
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
