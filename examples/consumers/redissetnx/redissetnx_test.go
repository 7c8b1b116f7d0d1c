package redissetnx_test

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	_ "modernc.org/sqlite"

	"github.com/idemcheck/idemcheck/examples/consumers/redissetnx"
	"github.com/idemcheck/idemcheck/impl/contract/event"
	"github.com/idemcheck/idemcheck/impl/contract/handler"
)

// client connects to IDEMCHECK_REDIS_ADDR, or skips the test.
func client(t testing.TB) *redis.Client {
	t.Helper()
	addr := os.Getenv("IDEMCHECK_REDIS_ADDR")
	if addr == "" {
		t.Skip("IDEMCHECK_REDIS_ADDR is not set: skipping the Redis SET NX consumer (set it to 127.0.0.1:6379 to run it)")
	}
	c := redis.NewClient(&redis.Options{Addr: addr})
	t.Cleanup(func() { c.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := c.Ping(ctx).Err(); err != nil {
		t.Fatalf("redis at IDEMCHECK_REDIS_ADDR=%s: %v", addr, err)
	}
	return c
}

// runs numbers the key prefixes of this process's runs; with the pid and
// the time it keeps runs apart, in one test binary and across them.
var runs atomic.Int64

// prefix is a key prefix no other run uses.
func prefix() string {
	return fmt.Sprintf("idemcheck-test:redissetnx:%d:%d:%d:", os.Getpid(), time.Now().UnixNano(), runs.Add(1))
}

// cleanup deletes the keys under p.
func cleanup(c *redis.Client, p string) {
	ctx := context.Background()
	iter := c.Scan(ctx, 0, p+"*", 100).Iterator()
	for iter.Next(ctx) {
		c.Del(ctx, iter.Val())
	}
}

func message(id string, amount int64) handler.Message {
	return handler.Message{EventID: id, Event: event.OrderPaid{EventID: id, UserID: "u1", AmountCents: amount},
		Topic: "orders", Group: "ledger", IdempotencyKey: id, Attempts: 1}
}

// TestSequentialDeliveries: without crashes the consumer dedupes, and a
// failed effect releases its key so a redelivery credits it.
func TestSequentialDeliveries(t *testing.T) {
	rc := client(t)
	p := prefix()
	t.Cleanup(func() { cleanup(rc, p) })
	db, err := sql.Open("sqlite", filepath.Join(t.TempDir(), "db.sqlite"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	c := &redissetnx.Consumer{Redis: rc, Prefix: p}
	ctx := context.Background()
	// No table yet: the effect fails and the key is deleted.
	if err := c.Handle(ctx, db, message("e1", 500)); err == nil {
		t.Fatal("credit without a ledger table succeeded")
	}
	if n, _ := rc.Exists(ctx, p+"ledger:e1").Result(); n != 0 {
		t.Fatal("the key survived a failed effect")
	}
	if _, err := db.Exec(redissetnx.Schema); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if err := c.Handle(ctx, db, message("e1", 500)); err != nil {
			t.Fatal(err)
		}
	}
	var n int
	if err := db.QueryRow(`SELECT COUNT(*) FROM ledger`).Scan(&n); err != nil || n != 1 {
		t.Fatalf("%d credits (%v), want 1", n, err)
	}
}
