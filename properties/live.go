package properties

import (
	"fmt"
	"slices"

	"github.com/idemcheck/idemcheck/faults/runner"
	"github.com/idemcheck/idemcheck/faults/scenario"
	"github.com/idemcheck/idemcheck/impl/contract/broker"
	"github.com/idemcheck/idemcheck/internal/history"
	"github.com/idemcheck/idemcheck/internal/law"
)

// The invariants a live broker's history is judged by, in report order.
const (
	LiveBoundedAttempts = law.BoundedAttempts
	LiveDLQMetadata     = law.DLQMetadata
	LiveNothingLost     = law.NothingLost
	LiveProducerGate    = law.ProducerGate
	LiveSingleCredit    = law.SingleCredit
)

// LiveInvariants lists the live invariants in report order.
func LiveInvariants() []string {
	return []string{LiveBoundedAttempts, LiveDLQMetadata, LiveNothingLost, LiveProducerGate, LiveSingleCredit}
}

// LiveVerdict is the judgement of one invariant on one live history.
type LiveVerdict struct {
	Invariant string `json:"invariant"`
	Holds     bool   `json:"holds"`
	// Detail says what broke, in one stable line (no times), or "".
	Detail string `json:"detail,omitempty"`
}

// JudgeLive judges a recorded live history, after the run:
//
//   - bounded-attempts: no message is delivered to a group more than
//     max_attempts times, and no delivery carries a larger attempt count;
//   - dlq-metadata: every DLQ entry names the message's topic, group,
//     tenant and key; one the broker routed carries attempts = max_attempts
//     and the last error of the last delivery (the last nack's reason, or
//     "ack_timeout" when it was never settled); a poison one, its reason;
//   - nothing-lost: every produced event is, in every group, credited or
//     in the DLQ; a poison one is never credited; a healthy one sits
//     uncredited in the DLQ only when no delivery of it that the history
//     recorded was given up by the consumer by itself (nacked with a reason
//     the run did not inject, unless it is the claim "locked" after a
//     crashed, stalled or dropped delivery, or dead-lettered as poison);
//   - producer-gate: a key the broker accepted is never enqueued again;
//   - single-credit: no event is credited twice in a group (ledger entries
//     and committed effects alike).
func JudgeLive(h *runner.LiveHistory) []LiveVerdict {
	return []LiveVerdict{
		verdict(LiveBoundedAttempts, liveBounded(h)),
		verdict(LiveDLQMetadata, liveDLQ(h)),
		verdict(LiveNothingLost, liveLost(h)),
		verdict(LiveProducerGate, liveGate(h)),
		verdict(LiveSingleCredit, liveCredit(h)),
	}
}

func verdict(name, detail string) LiveVerdict {
	return LiveVerdict{Invariant: name, Holds: detail == "", Detail: detail}
}

type groupOffset struct {
	group  string
	offset int64
}

func liveBounded(h *runner.LiveHistory) string {
	limit := h.Scenario.MaxAttempts
	n := map[groupOffset]int{}
	for _, d := range h.Deliveries {
		k := groupOffset{d.Consumer, d.Offset}
		n[k]++
		if n[k] > limit || d.Attempts > limit {
			return fmt.Sprintf("%s got %s (offset %d) %d times (the broker counts %d), over max_attempts %d",
				d.Consumer, d.Key, d.Offset, n[k], d.Attempts, limit)
		}
	}
	return ""
}

func liveDLQ(h *runner.LiveHistory) string {
	limit := h.Scenario.MaxAttempts
	keyOf := map[int64]string{}
	tenantOf := map[string]string{}
	for _, e := range h.Scenario.Events {
		tenantOf[e.ID] = e.Tenant
	}
	for _, p := range h.Produces {
		if !p.Duplicate {
			keyOf[p.Offset] = p.Key
		}
	}
	last := map[groupOffset]runner.LiveDeliveryRecord{}
	count := map[groupOffset]int{}
	for _, d := range h.Deliveries {
		last[groupOffset{d.Consumer, d.Offset}] = d
		count[groupOffset{d.Consumer, d.Offset}]++
	}
	for _, e := range h.DLQ {
		key, known := keyOf[e.Offset]
		switch {
		case !known || e.Key != key:
			return fmt.Sprintf("DLQ entry for offset %d names key %q, the message's is %q", e.Offset, e.Key, key)
		case e.Topic != h.Scenario.Topic:
			return fmt.Sprintf("DLQ entry for %s names topic %q, want %q", e.Key, e.Topic, h.Scenario.Topic)
		case !slices.Contains(h.Scenario.Consumers, e.Group):
			return fmt.Sprintf("DLQ entry for %s names group %q, not a consumer of the run", e.Key, e.Group)
		case e.Tenant != tenantOf[e.Key]:
			return fmt.Sprintf("DLQ entry for %s names tenant %q, want %q", e.Key, e.Tenant, tenantOf[e.Key])
		case e.LastError == "":
			return fmt.Sprintf("DLQ entry for %s in %s carries no last error", e.Key, e.Group)
		case e.Poison:
			if e.Attempts < 1 || e.Attempts > limit {
				return fmt.Sprintf("poison DLQ entry for %s in %s carries attempts %d", e.Key, e.Group, e.Attempts)
			}
			continue
		case e.Attempts != limit:
			return fmt.Sprintf("DLQ entry for %s in %s carries attempts %d, want max_attempts %d", e.Key, e.Group, e.Attempts, limit)
		}
		k := groupOffset{e.Group, e.Offset}
		d, seen := last[k]
		if !seen || count[k] < limit {
			continue // the last delivery was not observed: its error is unknown
		}
		want := "ack_timeout"
		if d.Outcome == runner.LiveNacked {
			want = d.Reason
		}
		if e.LastError != want {
			return fmt.Sprintf("DLQ entry for %s in %s carries last error %q; its last delivery ended with %q", e.Key, e.Group, e.LastError, want)
		}
	}
	return ""
}

func liveLost(h *runner.LiveHistory) string {
	credited := map[[2]string]bool{}
	for _, e := range h.Ledger {
		credited[[2]string{e.Consumer, e.EventID}] = true
	}
	dead, spent := map[[2]string]bool{}, map[[2]string]bool{}
	for _, e := range h.DLQ {
		dead[[2]string{e.Group, e.Key}] = true
		if !e.Poison {
			spent[[2]string{e.Group, e.Key}] = true
		}
	}
	poison := map[string]bool{}
	for _, e := range h.Scenario.Events {
		poison[e.ID] = e.Fate == scenario.FatePoison
	}
	produced := map[string]bool{}
	var keys []string
	for _, p := range h.Produces {
		if !produced[p.Key] {
			produced[p.Key] = true
			keys = append(keys, p.Key)
		}
	}
	for _, key := range keys {
		for _, g := range h.Scenario.Consumers {
			k := [2]string{g, key}
			if !credited[k] && !dead[k] {
				state := "quiesced"
				if !h.Quiesced {
					state = "did not quiesce"
				}
				return fmt.Sprintf("%s is neither credited nor in the DLQ of %s (the run %s)", key, g, state)
			}
		}
	}
	var given []history.Delivery
	for _, d := range h.History().Deliveries {
		if d.GaveUp {
			given = append(given, d)
		}
	}
	for _, key := range keys {
		for _, g := range h.Scenario.Consumers {
			k := [2]string{g, key}
			switch {
			case poison[key] && credited[k]:
				return fmt.Sprintf("poison %s is credited in %s", key, g)
			case poison[key] || credited[k]:
			case !spent[k]:
				return fmt.Sprintf("healthy %s was dead-lettered as poison in %s, never credited", key, g)
			default:
				// Which deliveries the consumer gave up on by itself is the
				// live run's record of its own faults (runner.LiveHistory.History).
				for _, d := range given {
					if d.Group == g && d.Event == key {
						return fmt.Sprintf("healthy %s sits in %s's DLQ, never credited, though the consumer gave up on it by itself: attempt %d ended %s (%s)", key, g, d.Attempt, d.Answer, d.Reason)
					}
				}
			}
		}
	}
	return ""
}

// liveGate judges producer-gate by the one function of not-reenqueued over
// the history (package internal/history): the live verdict of
// producer-gate has always been that law alone, and a live history
// reports its first breach, in one line.
func liveGate(h *runner.LiveHistory) string {
	if bs := history.Judge(h.History(), law.NotReenqueued); len(bs) > 0 {
		return bs[0].Details[0]
	}
	return ""
}

func liveCredit(h *runner.LiveHistory) string {
	n := map[[2]string]int{}
	for _, e := range h.Ledger {
		k := [2]string{e.Consumer, e.EventID}
		if n[k]++; n[k] > 1 {
			return fmt.Sprintf("%s is credited %d times in %s's ledger", e.EventID, n[k], e.Consumer)
		}
	}
	c := map[[2]string]int{}
	for _, d := range h.Deliveries {
		if !d.Committed {
			continue
		}
		k := [2]string{d.Consumer, d.Key}
		if c[k]++; c[k] > 1 {
			return fmt.Sprintf("%s's effect committed %d times in %s", d.Key, c[k], d.Consumer)
		}
	}
	return ""
}

// dlqByBroker counts the DLQ entries the broker routed (not poison).
func dlqByBroker(dlq []broker.DLQEntry) int {
	n := 0
	for _, e := range dlq {
		if !e.Poison {
			n++
		}
	}
	return n
}
