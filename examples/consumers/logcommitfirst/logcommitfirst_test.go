package logcommitfirst_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/idemcheck/idemcheck/consumertest"
	"github.com/idemcheck/idemcheck/consumertest/laws"
	"github.com/idemcheck/idemcheck/consumertest/scenario"
	"github.com/idemcheck/idemcheck/examples/consumers/logcommitfirst"
)

// A commit before the effect runs ahead of it: the harness sees it when
// the commit lands (commit-after-apply), before any crash loses the record.
func TestCommitFirstIsCaught(t *testing.T) {
	res, err := consumertest.Hunt(consumertest.Consumer{
		Name:    "logcommitfirst",
		Schema:  logcommitfirst.Schema,
		Log:     &logcommitfirst.Consumer,
		Effects: consumertest.PerEvent(logcommitfirst.Effects),
	}, consumertest.Checks(300), consumertest.Seed(1))
	if err != nil {
		t.Fatal(err)
	}
	if !res.Failed || res.Law != laws.CommitAfterApply || !strings.Contains(res.Report(), "commits p") {
		t.Fatalf("want commit-after-apply broken at a commit, got:\n%s", res.Report())
	}
	t.Log(res.Report())
}

// A crash between the commit and the effect loses the record: the
// restarted worker starts past it.
func TestCommitFirstLosesARecordOnACrash(t *testing.T) {
	s, err := scenario.Unmarshal([]byte(`{"version": 1, "workers": 1, "partitions": 1,
		"policy": {"maxAttempts": 4, "backoffMs": 100, "maxBackoffMs": 800, "ackTimeoutMs": 5000},
		"events": [{"id": "e1", "user": "u1", "amountCents": 100}],
		"steps": [{"op": "run", "worker": 1}, {"op": "run", "worker": 1}, {"op": "run", "worker": 1}, {"op": "run", "worker": 1}, {"op": "crash", "worker": 1}]}`))
	if err != nil {
		t.Fatal(err)
	}
	res, err := consumertest.Replay(consumertest.Consumer{
		Name:    "logcommitfirst",
		Schema:  logcommitfirst.Schema,
		Log:     &logcommitfirst.Consumer,
		Effects: consumertest.PerEvent(logcommitfirst.Effects),
	}, s)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, b := range res.Breaches {
		got = append(got, b.Law)
	}
	if !slices.Contains(got, laws.NothingLost) || !slices.Contains(got, laws.CommitAfterApply) {
		t.Fatalf("want nothing-lost and commit-after-apply broken, got %v:\n%s", got, res.Report())
	}
}
