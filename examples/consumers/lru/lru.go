// Package lru is a broken consumer: it remembers the event ids it handled
// in an in-process cache and skips those. The cache is per process: after a
// restart, or on another worker, a replayed or redelivered event is
// credited again.
package lru

import (
	"container/list"
	"context"
	"database/sql"
	"fmt"
	"io"
	"sync"

	"github.com/idemcheck/idemcheck/impl/contract/handler"
)

// Schema is the consumer's table.
const Schema = `
CREATE TABLE ledger (
	event_id     TEXT    NOT NULL,
	user_id      TEXT    NOT NULL,
	amount_cents INTEGER NOT NULL
);`

// Cache is a small LRU set of event ids.
type Cache struct {
	mu    sync.Mutex
	size  int
	order *list.List
	items map[string]*list.Element
}

// NewCache returns an empty cache of size ids.
func NewCache(size int) *Cache {
	return &Cache{size: size, order: list.New(), items: map[string]*list.Element{}}
}

// Seen reports whether id is cached, and caches it.
func (c *Cache) Seen(id string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.items[id]; ok {
		c.order.MoveToFront(e)
		return true
	}
	return false
}

// Add caches id, evicting the least recently used.
func (c *Cache) Add(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.items[id] = c.order.PushFront(id)
	if c.order.Len() > c.size {
		old := c.order.Back()
		c.order.Remove(old)
		delete(c.items, old.Value.(string))
	}
}

// Close empties the cache.
func (c *Cache) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.items = map[string]*list.Element{}
	c.order.Init()
	return nil
}

// NewWorker starts a worker process: a fresh cache and the handler over it.
func NewWorker(string, *sql.DB) (handler.Func, io.Closer, error) {
	cache := NewCache(1024)
	h := func(ctx context.Context, db *sql.DB, m handler.Message) error {
		if m.Event.AmountCents <= 0 {
			return handler.Poison(fmt.Errorf("order %s: amount %d", m.Event.OrderID, m.Event.AmountCents))
		}
		if cache.Seen(m.EventID) {
			return nil
		}
		if _, err := db.ExecContext(ctx, `INSERT INTO ledger (event_id, user_id, amount_cents) VALUES ($1, $2, $3)`,
			m.EventID, m.Event.UserID, m.Event.AmountCents); err != nil {
			return err
		}
		cache.Add(m.EventID)
		return nil
	}
	return h, cache, nil
}
