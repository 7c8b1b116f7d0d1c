// Package ownmessage is a correct consumer written against its own message
// type, as a broker client hands it: a Delivery with a key, headers (the
// producer's message-id, a UUID, and the content type) and a JSON body. It
// checks the headers, decodes the body (a body that does not decode, or a
// payment of no amount, is poison), and applies the ADR pattern keyed by
// the message-id.
//
// Its test puts it under the harness unchanged with consumertest.HandlerOf
// and FromHarness (the message its producer would publish for the
// harness's event), and Consumer.EventIDs giving UUIDs, which the consumer
// parses. The harness never flags it, and Verify proves it within its
// bounds.
package ownmessage

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/idemcheck/idemcheck/impl/contract/handler"
)

// Schema is the consumer's tables.
const Schema = `
CREATE TABLE payments (
	message_id   TEXT    NOT NULL,
	order_id     TEXT    NOT NULL,
	account      TEXT    NOT NULL,
	amount_cents INTEGER NOT NULL
);
CREATE TABLE processed_messages (
	message_id TEXT PRIMARY KEY
);`

// Delivery is a message as the broker client hands it.
type Delivery struct {
	Key     []byte
	Headers map[string]string
	Body    []byte
}

// The headers the producer sets.
const (
	HeaderMessageID   = "message-id"
	HeaderContentType = "content-type"
)

// ContentType is the body's.
const ContentType = "application/vnd.payments.order-paid+json; version=1"

// OrderPaid is the body.
type OrderPaid struct {
	OrderID     string `json:"orderId"`
	Account     string `json:"account"`
	AmountCents int64  `json:"amountCents"`
}

// Handle records the payment once per message-id.
func Handle(ctx context.Context, db *sql.DB, d Delivery) error {
	id, p, err := decode(d)
	if err != nil {
		return handler.Poison(err)
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	var seen int
	err = tx.QueryRowContext(ctx, `SELECT 1 FROM processed_messages WHERE message_id = $1`, id).Scan(&seen)
	switch {
	case err == nil:
		return nil // a redelivery
	case !errors.Is(err, sql.ErrNoRows):
		return err
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO payments (message_id, order_id, account, amount_cents) VALUES ($1, $2, $3, $4)`,
		id, p.OrderID, p.Account, p.AmountCents); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO processed_messages (message_id) VALUES ($1)`, id); err != nil {
		return err
	}
	return tx.Commit()
}

// decode checks the headers and decodes the body: an error means the
// message can never be handled.
func decode(d Delivery) (string, OrderPaid, error) {
	var p OrderPaid
	id := d.Headers[HeaderMessageID]
	if !isUUID(id) {
		return "", p, fmt.Errorf("message-id %q is not a UUID", id)
	}
	if ct := d.Headers[HeaderContentType]; ct != ContentType {
		return "", p, fmt.Errorf("message %s: content type %q", id, ct)
	}
	if err := json.Unmarshal(d.Body, &p); err != nil {
		return "", p, fmt.Errorf("message %s: %w", id, err)
	}
	if p.OrderID == "" || p.Account == "" || p.AmountCents <= 0 {
		return "", p, fmt.Errorf("message %s: payment %+v", id, p)
	}
	return id, p, nil
}

// isUUID reports whether s is a UUID in its canonical text form.
func isUUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i, c := range s {
		switch {
		case i == 8 || i == 13 || i == 18 || i == 23:
			if c != '-' {
				return false
			}
		case '0' <= c && c <= '9', 'a' <= c && c <= 'f':
		default:
			return false
		}
	}
	return true
}
