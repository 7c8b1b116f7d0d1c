// Package lease is a broken consumer: it claims each event with a lease,
// so that an event whose worker died mid-way is not blocked for ever.
// The claim is a row of a claims table, committed on its own before the
// work; once its lease has run out, another worker takes the claim over
// and does the work again. The work is slow (the payment provider is
// called first), which is why the lease is there at all.
//
// The takeover is right; what is missing is the fence. The owner's final
// commit does not check that the claim is still its own, so a slow owner
// whose lease ran out while it waited for the provider commits its credit
// after the worker that took over has committed the same credit: the
// event is applied twice. The fix is a fencing token: bump it at every
// claim and takeover, and make the final commit's UPDATE of the claim
// require the token it was given (zero rows updated: roll back).
//
// Time is the handler's own time.Now, as a team writes it.
package lease

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/idemcheck/idemcheck/impl/contract/handler"
)

// Schema is the consumer's tables.
const Schema = `
CREATE TABLE ledger (
	event_id     TEXT    NOT NULL,
	user_id      TEXT    NOT NULL,
	amount_cents INTEGER NOT NULL
);
CREATE TABLE claims (
	event_id    TEXT PRIMARY KEY,
	status      TEXT   NOT NULL,
	lease_until BIGINT NOT NULL
);`

// LeaseFor is how long a claim is held before another worker may take it
// over: ten times what the work takes in production.
const LeaseFor = 2 * time.Second

// ErrClaimed is the transient answer to an event another worker holds a
// live lease on: the broker redelivers it later.
var ErrClaimed = errors.New("the event is claimed by another worker")

// Handle claims the event, calls the payment provider, and credits the
// ledger.
func Handle(ctx context.Context, db *sql.DB, m handler.Message) error {
	if m.Event.AmountCents <= 0 {
		return handler.Poison(fmt.Errorf("order %s: amount %d", m.Event.OrderID, m.Event.AmountCents))
	}
	mine, err := claim(ctx, db, m.EventID)
	if err != nil || !mine {
		return err // nil: done already
	}
	handler.Point(ctx, "POST /payments/"+m.Event.OrderID+"/capture")

	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `INSERT INTO ledger (event_id, user_id, amount_cents) VALUES ($1, $2, $3)`,
		m.EventID, m.Event.UserID, m.Event.AmountCents); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `UPDATE claims SET status = 'done' WHERE event_id = $1`, m.EventID); err != nil {
		return err
	}
	return tx.Commit()
}

// claim takes the event's claim: a new one, or one whose lease has run
// out. It reports false for an event already done, ErrClaimed for one
// another worker holds.
func claim(ctx context.Context, db *sql.DB, eventID string) (bool, error) {
	now := time.Now()
	until := now.Add(LeaseFor).UnixMilli()
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return false, err
	}
	defer tx.Rollback()
	var status string
	var leaseUntil int64
	err = tx.QueryRowContext(ctx, `SELECT status, lease_until FROM claims WHERE event_id = $1`, eventID).Scan(&status, &leaseUntil)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		_, err = tx.ExecContext(ctx, `INSERT INTO claims (event_id, status, lease_until) VALUES ($1, 'processing', $2)`, eventID, until)
	case err != nil:
		return false, err
	case status == "done":
		return false, nil
	case leaseUntil > now.UnixMilli():
		return false, ErrClaimed
	default: // the lease ran out: its worker died, take it over
		_, err = tx.ExecContext(ctx, `UPDATE claims SET lease_until = $2 WHERE event_id = $1`, eventID, until)
	}
	if err != nil {
		return false, err
	}
	return true, tx.Commit()
}
