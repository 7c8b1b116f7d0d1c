// Package payloadhash is a broken consumer: the ownmessage consumer's
// service, deduplicating on a SHA-256 of the message body instead of the
// producer's message-id, as a consumer of a broker without message ids
// does ("the same bytes are the same message"). Two distinct payments
// with equal bodies — the same order, account and amount, paid twice, or
// published twice by two producers — are one to it: the second is
// skipped as a duplicate and lost.
//
// The harness's generator draws such payload collisions (an event that
// repeats the payload of the one before, under an id of its own), so does
// a fuzzing input, and so does Verify's fate "same": Check, Hunt, Fuzz and
// Verify catch it as nothing-lost.
package payloadhash

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/idemcheck/idemcheck/examples/consumers/ownmessage"
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
CREATE TABLE processed_payloads (
	payload_sha256 TEXT PRIMARY KEY
);`

// Handle records the payment once per body.
func Handle(ctx context.Context, db *sql.DB, d ownmessage.Delivery) error {
	var p ownmessage.OrderPaid
	if err := json.Unmarshal(d.Body, &p); err != nil {
		return handler.Poison(err)
	}
	if p.AmountCents <= 0 {
		return handler.Poison(fmt.Errorf("payment %+v", p))
	}
	sum := sha256.Sum256(d.Body)
	key := hex.EncodeToString(sum[:])
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	var seen int
	err = tx.QueryRowContext(ctx, `SELECT 1 FROM processed_payloads WHERE payload_sha256 = $1`, key).Scan(&seen)
	switch {
	case err == nil:
		return nil // "a duplicate": the same bytes were handled
	case !errors.Is(err, sql.ErrNoRows):
		return err
	}
	// The message-id is kept for the record, but it is not the key.
	if _, err := tx.ExecContext(ctx, `INSERT INTO payments (message_id, order_id, account, amount_cents) VALUES ($1, $2, $3, $4)`,
		d.Headers[ownmessage.HeaderMessageID], p.OrderID, p.Account, p.AmountCents); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO processed_payloads (payload_sha256) VALUES ($1)`, key); err != nil {
		return err
	}
	return tx.Commit()
}
