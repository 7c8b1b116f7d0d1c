package servers

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/idemcheck/idemcheck/cmd/fuzzrun/internal/ext"
	"github.com/idemcheck/idemcheck/examples/consumers/redissetnx"
	"github.com/idemcheck/idemcheck/internal/consumerharness"
)

// RedisEnv names the variable that holds the address of the Redis the
// consumer redissetnx dedupes with, as its tests read it.
const RedisEnv = "IDEMCHECK_REDIS_ADDR"

// consumers are the example consumers over real servers.
var consumers = []ext.Consumer{{
	Name:   "redissetnx",
	Law:    consumerharness.LawNothingLost,
	Doc:    "dedupes with Redis SET NX at " + RedisEnv + ", credits, DELs the key on failure: a crash after the SET loses the event",
	Serial: true,
}}

// openConsumer opens the example consumer name.
func openConsumer(name string) (consumerharness.Consumer, io.Closer, error) {
	if name != "redissetnx" {
		return consumerharness.Consumer{}, nil, fmt.Errorf("%q is not an example consumer over a real server", name)
	}
	return openRedisSetNX()
}

// openRedisSetNX connects to the Redis at IDEMCHECK_REDIS_ADDR and puts
// examples/consumers/redissetnx under the harness, as its test does: the
// start of a scenario's first worker (w1#1; a restart is w1#2) opens a key
// prefix of its own, which the scenario's workers share, restarted or
// not, so that no scenario sees another's keys. The scenarios must
// therefore play one at a time (ext.Consumer.Serial). Closing the closer
// deletes every key of the run and closes the client.
func openRedisSetNX() (consumerharness.Consumer, io.Closer, error) {
	addr := os.Getenv(RedisEnv)
	if addr == "" {
		return consumerharness.Consumer{}, nil, fmt.Errorf("the consumer redissetnx dedupes with Redis: %s is not set (e.g. %s=127.0.0.1:6379)", RedisEnv, RedisEnv)
	}
	rc := redis.NewClient(&redis.Options{Addr: addr})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := rc.Ping(ctx).Err(); err != nil {
		rc.Close()
		return consumerharness.Consumer{}, nil, fmt.Errorf("redis at %s=%s: %w", RedisEnv, addr, err)
	}
	run := fmt.Sprintf("idemcheck-fuzzrun:redissetnx:%d:%d:", os.Getpid(), time.Now().UnixNano())
	var (
		mu        sync.Mutex
		cur       *redissetnx.Consumer
		scenarios int
	)
	c := consumerharness.Consumer{
		Name:   "redissetnx",
		Schema: redissetnx.Schema,
		Worker: func(id string, _ *sql.DB) (consumerharness.Handler, io.Closer, error) {
			mu.Lock()
			defer mu.Unlock()
			if cur == nil || id == "w1#1" {
				scenarios++
				cur = &redissetnx.Consumer{Redis: rc, Prefix: fmt.Sprintf("%s%d:", run, scenarios)}
			}
			return cur.Handle, nil, nil
		},
		Effects: consumerharness.PerEvent(redissetnx.Effects),
	}
	return c, &redisRun{rc: rc, prefix: run}, nil
}

// redisRun deletes a run's keys and closes its client.
type redisRun struct {
	rc     *redis.Client
	prefix string
}

func (r *redisRun) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var errs []error
	iter := r.rc.Scan(ctx, 0, r.prefix+"*", 500).Iterator()
	for iter.Next(ctx) {
		if err := r.rc.Del(ctx, iter.Val()).Err(); err != nil {
			errs = append(errs, err)
			break
		}
	}
	errs = append(errs, iter.Err(), r.rc.Close())
	return errors.Join(errs...)
}
