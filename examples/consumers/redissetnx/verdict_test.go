package redissetnx_test

import (
	"database/sql"
	"io"
	"strings"
	"sync"
	"testing"

	"github.com/idemcheck/idemcheck/consumertest"
	"github.com/idemcheck/idemcheck/consumertest/laws"
	"github.com/idemcheck/idemcheck/examples/consumers/redissetnx"
	"github.com/idemcheck/idemcheck/impl/contract/handler"
)

// consumer puts the Redis consumer under the harness. Every scenario gets
// keys of its own: the start of its first worker (w1#1; a restart is w1#2)
// opens a new prefix, which the scenario's workers share, restarted or
// not. The prefixes are deleted when the test ends.
func consumer(t *testing.T) consumertest.Consumer {
	rc := client(t)
	var (
		mu   sync.Mutex
		cur  *redissetnx.Consumer
		used []string
	)
	t.Cleanup(func() {
		for _, p := range used {
			cleanup(rc, p)
		}
	})
	return consumertest.Consumer{
		Name:   "redissetnx",
		Schema: redissetnx.Schema,
		Worker: func(id string, _ *sql.DB) (handler.Func, io.Closer, error) {
			mu.Lock()
			defer mu.Unlock()
			if cur == nil || id == "w1#1" {
				p := prefix()
				used = append(used, p)
				cur = &redissetnx.Consumer{Redis: rc, Prefix: p}
			}
			return cur.Handle, nil, nil
		},
		Effects: consumertest.PerEvent(redissetnx.Effects),
	}
}

// TestHarnessCatchesIt: the harness finds the lost event (a crash between
// the SET and the credit: the redelivery finds the key and skips) and
// shrinks it to at most 8 steps, with the Redis call in the trace.
func TestHarnessCatchesIt(t *testing.T) {
	res, err := consumertest.Hunt(consumer(t), consumertest.Checks(500), consumertest.Seed(1))
	if err != nil {
		t.Fatal(err)
	}
	if !res.Failed {
		t.Fatal("the harness did not catch SET NX, credit, DEL")
	}
	t.Logf("found after %d scenario(s):\n%s", res.Checks, res.Report())
	if res.Law != laws.NothingLost {
		t.Errorf("caught by %s, want %s", res.Law, laws.NothingLost)
	}
	if res.Scenario.Size() > 8 {
		t.Errorf("shrunk to %d steps, want at most 8", res.Scenario.Size())
	}
	if !strings.Contains(res.Report(), "redis SET ") {
		t.Error("the report's trace does not show the Redis call")
	}
}
