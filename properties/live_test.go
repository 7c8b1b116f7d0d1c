package properties_test

import (
	"strings"
	"testing"

	"github.com/idemcheck/idemcheck/faults/runner"
	"github.com/idemcheck/idemcheck/faults/scenario"
	"github.com/idemcheck/idemcheck/impl/contract/broker"
	"github.com/idemcheck/idemcheck/impl/contract/store"
	"github.com/idemcheck/idemcheck/properties"
)

// history is a clean live history: one event, produced once, delivered
// once and acked, credited once.
func history() *runner.LiveHistory {
	sc := &scenario.Live{Version: scenario.Version, Kind: scenario.KindLive, Topic: "orders", Consumers: []string{"ledger"},
		Policy: broker.Policy{MaxAttempts: 2, BackoffMs: 1, MaxBackoffMs: 4, AckTimeoutMs: 20},
		Events: []scenario.Event{{ID: "e1", Tenant: "acme"}},
		Steps:  []scenario.LiveStep{{Op: scenario.LiveProduce}}}
	return &runner.LiveHistory{Scenario: sc, Quiesced: true,
		Produces:   []runner.LiveProduce{{Key: "e1", Offset: 1}},
		Deliveries: []runner.LiveDeliveryRecord{{Consumer: "ledger", Offset: 1, Key: "e1", Tenant: "acme", Attempts: 1, Outcome: runner.LiveAcked, Committed: true}},
		Ledger:     []store.Entry{{Consumer: "ledger", EventID: "e1"}}}
}

func nack(attempt int, reason string) runner.LiveDeliveryRecord {
	return runner.LiveDeliveryRecord{Consumer: "ledger", Offset: 1, Key: "e1", Tenant: "acme", Attempts: attempt, Outcome: runner.LiveNacked, Reason: reason}
}

// TestJudgeLive: each invariant holds on a clean history and fails on a
// history broken the way a misconfigured broker breaks it.
func TestJudgeLive(t *testing.T) {
	exhausted := func(h *runner.LiveHistory) {
		h.Deliveries = []runner.LiveDeliveryRecord{nack(1, "boom"), nack(2, "boom")}
		h.Ledger = nil
	}
	cases := []struct {
		name, invariant, want string
		breakIt               func(*runner.LiveHistory)
	}{
		{"unbounded redelivery", properties.LiveBoundedAttempts, "3 times", func(h *runner.LiveHistory) {
			h.Deliveries = []runner.LiveDeliveryRecord{nack(1, "boom"), nack(2, "boom"), h.Deliveries[0]}
		}},
		{"DLQ without the last error", properties.LiveDLQMetadata, `last error "delivery_limit"`, func(h *runner.LiveHistory) {
			exhausted(h)
			h.DLQ = []broker.DLQEntry{{Topic: "orders", Offset: 1, Group: "ledger", Attempts: 2, LastError: "delivery_limit", Tenant: "acme", Key: "e1"}}
		}},
		{"DLQ with the wrong attempts", properties.LiveDLQMetadata, "attempts 3", func(h *runner.LiveHistory) {
			exhausted(h)
			h.DLQ = []broker.DLQEntry{{Topic: "orders", Offset: 1, Group: "ledger", Attempts: 3, LastError: "boom", Tenant: "acme", Key: "e1"}}
		}},
		{"exhausted and not dead-lettered", properties.LiveNothingLost, "neither credited nor in the DLQ", exhausted},
		{"given up by the consumer", properties.LiveNothingLost, "the consumer gave up on it by itself: attempt 1 ended nack (boom)", func(h *runner.LiveHistory) {
			exhausted(h)
			h.DLQ = []broker.DLQEntry{{Topic: "orders", Offset: 1, Group: "ledger", Attempts: 2, LastError: "boom", Tenant: "acme", Key: "e1"}}
		}},
		{"healthy dead-lettered as poison", properties.LiveNothingLost, "dead-lettered as poison", func(h *runner.LiveHistory) {
			h.Deliveries = []runner.LiveDeliveryRecord{{Consumer: "ledger", Offset: 1, Key: "e1", Tenant: "acme", Attempts: 1, Outcome: runner.LiveDeadLetter, Reason: "bad key"}}
			h.Ledger = nil
			h.DLQ = []broker.DLQEntry{{Topic: "orders", Offset: 1, Group: "ledger", Attempts: 1, LastError: "bad key", Tenant: "acme", Key: "e1", Poison: true}}
		}},
		{"poison credited", properties.LiveNothingLost, "poison e1 is credited", func(h *runner.LiveHistory) {
			h.Scenario.Events[0].Fate = scenario.FatePoison
		}},
		{"enqueued twice", properties.LiveProducerGate, "enqueued twice", func(h *runner.LiveHistory) {
			h.Produces = append(h.Produces, runner.LiveProduce{Key: "e1", Offset: 2, Retry: true})
		}},
		{"credited twice", properties.LiveSingleCredit, "committed 2 times", func(h *runner.LiveHistory) {
			h.Deliveries = append(h.Deliveries, h.Deliveries[0])
		}},
	}
	for _, v := range properties.JudgeLive(history()) {
		if !v.Holds {
			t.Fatalf("the clean history breaks %s: %s", v.Invariant, v.Detail)
		}
	}
	// Dead-lettered by the run's own faults: an injected failure, then a
	// crash after the claim and the claim found locked by its redelivery.
	ok := history()
	crashed := nack(2, "")
	crashed.Outcome = runner.LiveCrashed
	ok.Deliveries = []runner.LiveDeliveryRecord{nack(1, runner.LiveReasonFate), crashed, nack(3, "locked")}
	ok.Scenario.MaxAttempts, ok.Ledger = 3, nil
	ok.DLQ = []broker.DLQEntry{{Topic: "orders", Offset: 1, Group: "ledger", Attempts: 3, LastError: "locked", Tenant: "acme", Key: "e1"}}
	for _, v := range properties.JudgeLive(ok) {
		if !v.Holds {
			t.Fatalf("a message dead-lettered by the run's faults breaks %s: %s", v.Invariant, v.Detail)
		}
	}
	ok.Deliveries[0] = nack(1, "locked") // locked with nothing left unsettled before it: the consumer's own
	if v := properties.JudgeLive(ok)[2]; v.Invariant != properties.LiveNothingLost || v.Holds {
		t.Fatalf("a consumer answering locked by itself passes: %+v", v)
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := history()
			c.breakIt(h)
			for _, v := range properties.JudgeLive(h) {
				if v.Invariant != c.invariant {
					continue
				}
				if v.Holds || !strings.Contains(v.Detail, c.want) {
					t.Fatalf("%s: holds=%v detail %q, want a failure naming %q", c.invariant, v.Holds, v.Detail, c.want)
				}
				return
			}
			t.Fatalf("no verdict for %s", c.invariant)
		})
	}
}
