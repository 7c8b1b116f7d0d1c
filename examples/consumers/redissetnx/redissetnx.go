// Package redissetnx is a consumer that dedupes with Redis, the way many
// teams do: SET the event's key with NX, apply the effect if the SET won,
// and DEL the key if the effect failed so that a redelivery can try again.
//
// It is broken, and the harness shows how: a crash after the SET and before
// the effect commits leaves the key set with no effect and no DEL. The
// broker redelivers the event, the SET NX now fails, the handler takes the
// event for a duplicate and acks it, and the credit is lost for good.
//
// Each Redis call is preceded by handler.Point, which does nothing in
// production and makes the call a scheduling and crash point under the
// harness, as every SQL statement already is. The point names the key
// without its prefix, so that the trace of a scenario is the same whatever
// prefix a run chose.
package redissetnx

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/idemcheck/idemcheck/impl/contract/handler"
)

// Schema is the consumer's table.
const Schema = `CREATE TABLE ledger (event_id TEXT NOT NULL, user_id TEXT NOT NULL, amount_cents INTEGER NOT NULL)`

// Effects reads what the consumer did, one row per credit.
const Effects = `SELECT event_id, amount_cents FROM ledger`

// Consumer credits the ledger once per event, as far as Redis knows.
type Consumer struct {
	// Redis holds the dedupe keys.
	Redis *redis.Client
	// Prefix starts every key this consumer sets, so that two
	// deployments (or two test runs) sharing a Redis never meet.
	Prefix string
	// TTL bounds how long a key is kept; zero keeps it for ever.
	TTL time.Duration
}

// Handle is the consumer's handler.Func.
func (c *Consumer) Handle(ctx context.Context, db *sql.DB, m handler.Message) error {
	if m.Event.AmountCents <= 0 {
		return handler.Poison(fmt.Errorf("order %s: amount %d", m.Event.OrderID, m.Event.AmountCents))
	}
	name := m.Group + ":" + m.EventID
	key := c.Prefix + name
	handler.Point(ctx, "redis SET "+name+" NX")
	won, err := c.Redis.SetNX(ctx, key, m.Attempts, c.TTL).Result()
	if err != nil {
		return fmt.Errorf("redis SET NX %s: %w", key, err)
	}
	if !won {
		return nil // seen before: a duplicate delivery
	}
	_, err = db.ExecContext(ctx, `INSERT INTO ledger (event_id, user_id, amount_cents) VALUES ($1, $2, $3)`,
		m.EventID, m.Event.UserID, m.Event.AmountCents)
	if err != nil {
		// Let a redelivery try again.
		handler.Point(ctx, "redis DEL "+name)
		if derr := c.Redis.Del(context.WithoutCancel(ctx), key).Err(); derr != nil {
			return fmt.Errorf("credit %s: %w (and redis DEL %s: %v)", m.EventID, err, key, derr)
		}
		return fmt.Errorf("credit %s: %w", m.EventID, err)
	}
	return nil
}
