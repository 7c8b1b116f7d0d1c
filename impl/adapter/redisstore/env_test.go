package redisstore_test

import (
	"context"
	"os"
	"testing"

	"github.com/idemcheck/idemcheck/impl/adapter/redisstore"
	"github.com/idemcheck/idemcheck/impl/contract/clock"
)

// addr returns the Redis address of the tests, or skips them: they need a
// real Redis, which CI starts and names in IDEMCHECK_REDIS_ADDR.
func addr(t testing.TB) string {
	t.Helper()
	a := os.Getenv("IDEMCHECK_REDIS_ADDR")
	if a == "" {
		t.Skip("IDEMCHECK_REDIS_ADDR is unset: skipping the Redis tests (set it to host:port of a Redis, e.g. 127.0.0.1:6379; .ci/run does)")
	}
	return a
}

// open returns an empty store over c, dropped when the test ends.
func open(t testing.TB, c clock.Source) *redisstore.Store {
	t.Helper()
	s, err := redisstore.Open(context.Background(), addr(t), c)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return s
}
