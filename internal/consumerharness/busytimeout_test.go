package consumerharness

import (
	"strings"
	"testing"
)

// waitAcross is a scenario where w2 waits at BEGIN for the write lock w1's
// transaction holds, while time moves by ms.
func waitAcross(ms int64) *Scenario {
	return &Scenario{Version: 1, Workers: 2, Policy: Policy{MaxAttempts: 3, BackoffMs: 100, MaxBackoffMs: 100, AckTimeoutMs: 60000},
		Events: []Event{{ID: "e1", User: "u1", Amount: 100}},
		Steps: []Step{{Op: OpDuplicate, Pick: 0}, {Op: OpRun, Worker: 1}, {Op: OpRun, Worker: 1},
			{Op: OpRun, Worker: 2}, {Op: OpRun, Worker: 2}, {Op: OpAdvance, Ms: ms}}}
}

// TestABusyTimeoutGivesUpWhenTimeMovesPastIt: SQLite waits for a lock at
// most its busy timeout (5000 ms here); when the scenario's time moves
// past it while another transaction holds the lock, the waiting call
// answers busy, as the engine would, and the consumer copes (the ADR
// consumer's nack and redelivery).
func TestABusyTimeoutGivesUpWhenTimeMovesPastIt(t *testing.T) {
	res, err := Replay(adrConsumer(), waitAcross(6000), immediate)
	if err != nil {
		t.Fatal(err)
	}
	trace := res.Outcome.Trace.String()
	if !strings.Contains(trace, "w2 waits for a lock at begin") || !strings.Contains(trace, "w2 gives up waiting at begin after its busy timeout (5000ms)") {
		t.Fatalf("want w2 to wait at begin and give up when time moves past its busy timeout:\n%s", trace)
	}
	if res.Failed {
		t.Fatalf("the ADR consumer was flagged:\n%s", res.Report())
	}
}

// TestABusyTimeoutNotReachedKeepsWaiting: time moving by less than the
// busy timeout leaves the wait as it was.
func TestABusyTimeoutNotReachedKeepsWaiting(t *testing.T) {
	res, err := Replay(adrConsumer(), waitAcross(4000), immediate)
	if err != nil {
		t.Fatal(err)
	}
	trace := res.Outcome.Trace.String()
	if !strings.Contains(trace, "w2 waits for a lock at begin") {
		t.Fatalf("want w2 to wait at begin:\n%s", trace)
	}
	if strings.Contains(trace, "busy timeout") {
		t.Fatalf("w2 gave up before its busy timeout:\n%s", trace)
	}
	if res.Failed {
		t.Fatalf("the ADR consumer was flagged:\n%s", res.Report())
	}
}
