// Package kafkalive plays a team's log consumer (Consumer.Log) live:
// unchanged, against franz-go's in-process kfake cluster (Kafka's
// protocol, on loopback, in the test's process) through a franz-go
// client, each worker a member of one consumer group with eager
// balancing. Where consumertest's in-memory log broker schedules every
// step, a live run records what the broker did (deliveries, commits and
// the effects read at each, the effects once quiet) and judges the same
// laws on it; faults are the scenario vocabulary's crash, rebalance,
// replay and fail (a failure injected into the team's Handle call),
// played live. The broker's timing is not reproducible: a breach
// counts only once a replay of its scenario breaks the same law again,
// and one no replay reproduces is kept in Result.Unconfirmed, never
// reported as a failure.
//
//	func TestPositionsLive(t *testing.T) {
//		kafkalive.Check(t, positionsConsumer, kafkalive.Options{Runs: 4, Faults: 3})
//	}
//
// kfake is a fake written for tests, not Kafka: a live run shows the
// protocol's semantics as kfake implements them.
package kafkalive

import (
	"context"
	"testing"

	"github.com/idemcheck/idemcheck/consumertest"
	"github.com/idemcheck/idemcheck/internal/consumerharness/livelog"
)

// Options bound a live campaign: runs, the base seed of its scenarios,
// their workers, partitions, events and faults, and how many replays
// confirm a breach.
type Options = livelog.Options

// Result is a live campaign's verdict: a confirmed breach with the run
// that confirmed it, the breaches no replay reproduced, and counts.
type Result = livelog.Result

// Run plays o.Runs scenarios live against c's log consumer and returns
// the verdict instead of failing a test.
func Run(ctx context.Context, c consumertest.Consumer, o Options) (Result, error) {
	return livelog.Check(ctx, c, o)
}

// Check fails t when a live campaign confirms a breach (its report says
// which law, and the run that confirmed it), and logs the counts and any
// unconfirmed breach otherwise.
func Check(t testing.TB, c consumertest.Consumer, o Options) Result {
	t.Helper()
	res, err := Run(t.Context(), c, o)
	if err != nil {
		t.Fatalf("consumer %q live on kfake: %v", c.Name, err)
	}
	if res.Failed {
		t.Fatalf("consumer %q live on kfake:\n%s", c.Name, res.Report())
	}
	t.Logf("consumer %q live on kfake: %s", c.Name, res.Report())
	return res
}
