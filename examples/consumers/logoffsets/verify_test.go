package logoffsets_test

import (
	"testing"

	"github.com/idemcheck/idemcheck/consumertest"
	"github.com/idemcheck/idemcheck/consumertest/scenario"
)

// Every schedule within the default bounds (for a log: DefaultBounds.Log)
// keeps the laws: crashes at any point, a commit's among them, injected
// failures, a rebalance under a zombie, a reset of the group's offsets.
func TestVerify(t *testing.T) {
	consumertest.Verify(t, consumer(), consumertest.DefaultBounds)
}

// Two partitions of two records each, two workers and a rebalance: the
// fetches of different partitions commute, so the partial-order
// reduction prunes, and no schedule breaks a law.
func TestVerifyTwoPartitions(t *testing.T) {
	ok := scenario.FateOK
	res, err := consumertest.Explore(consumer(), consumertest.Bounds{Events: []scenario.Fate{ok, ok, ok}, Workers: 2, Partitions: 2, Preemptions: 1, Rebalances: 1})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Verified {
		t.Fatalf("a correct log consumer was flagged:\n%s", res.Report())
	}
	t.Log(res.Report())
}
