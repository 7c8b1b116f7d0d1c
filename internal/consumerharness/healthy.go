package consumerharness

import (
	"fmt"
	"slices"
	"strings"

	"github.com/idemcheck/idemcheck/impl/contract/broker"
	runhistory "github.com/idemcheck/idemcheck/internal/history"
)

// The summaries of healthy-applied's breaches that do not depend on when
// they were judged.
const (
	summaryDeadLettered = "a healthy event was dead-lettered, never applied, though the harness's faults did not spend its attempts"
	summaryPoisonKept   = "a poison event was not dead-lettered"
)

// quoteLong quotes an error for a delivery's line, cut longer than the
// trace's.
func quoteLong(s string) string {
	if len(s) > 120 {
		s = s[:117] + "..."
	}
	return fmt.Sprintf("%q", s)
}

// excused returns the events the harness's own faults may have kept from
// being applied: those with a message the broker dead-lettered once quiet
// for spent attempts, none of whose deliveries the consumer gave up on by
// itself (a nack or a poison answer in a delivery the harness did not
// fault: an injected failure, a crash, an ack timeout, a forced lock
// timeout), by the rule the reference world judges too (history.Excused). A
// delivery acked without the effect (another copy was in hand) is no
// giving up.
func (j judge) excused() map[string]bool {
	out := map[string]bool{}
	for k := range runhistory.Excused(j.c.History(j.o)) {
		out[k.Key] = true
	}
	// The consumer's own dead letters: it acked what it dead-lettered, so
	// no message of the broker's says how; the event's deliveries do. The
	// harness's faults must have hit as many of them as the broker's
	// policy retries, and the consumer given up on none by itself.
	for _, id := range j.o.Quiet.DeadLetters {
		faulted, gave := 0, false
		for _, d := range j.o.Deliveries {
			if d.Event != id || d.AfterReplay {
				continue
			}
			if d.Faulted() {
				faulted++
			}
			gave = gave || d.gaveUp()
		}
		if !gave && faulted >= j.s.Policy.MaxAttempts-1 && faulted > 0 {
			out[id] = true
		}
	}
	return out
}

// gaveUp reports whether the consumer gave up on the delivery by itself:
// it answered nack or poison and the harness caused no fault in it.
func (d Delivery) gaveUp() bool {
	return (d.Answer == AnswerNack || d.Answer == AnswerPoison) && !d.Faulted()
}

// deliveryLines lists the deliveries of event id before the replay and
// its dead-letter entries once quiet, one indented line each, for a
// breach's detail.
func (j judge) deliveryLines(id string) string {
	var b strings.Builder
	n := 0
	for _, d := range j.o.Deliveries {
		if d.Event == id && !d.AfterReplay {
			b.WriteString("\n      " + d.String())
			n++
		}
	}
	if n == 0 {
		b.WriteString("\n      (never delivered)")
	}
	for _, e := range j.o.DLQQuiet {
		if e.Key != id {
			continue
		}
		how := "for spent attempts"
		if e.Poison {
			how = "as poison"
		}
		fmt.Fprintf(&b, "\n      dead-lettered %s: offset %d after %d attempt(s), last error %s", how, e.Offset, e.Attempts, quoteLong(e.LastError))
	}
	return b.String()
}

// poisonDetail says of poison event e what it must not have had: its
// effect (n times, with Effects per event; 0 for a total) or a place
// outside the dead-letter queue.
func (j judge) poisonDetail(e Event, n int, dead bool, snap Snapshot, when string) string {
	var what []string
	if n > 0 {
		what = append(what, fmt.Sprintf("was applied %d time(s) (rows %s)", n, rowsOf(snap, e.ID)))
	}
	if !dead {
		what = append(what, "is not in the dead-letter queue")
	}
	return fmt.Sprintf("%s (poison: %d cents) %s %s:%s", e.ID, e.Amount, strings.Join(what, " and "), when, j.deliveryLines(e.ID))
}

// spentDetail says of a healthy event that sits un-applied in the DLQ
// which of its deliveries the harness did not fault.
func (j judge) spentDetail(e Event, when string) string {
	clean, faulted := 0, 0
	for _, d := range j.o.Deliveries {
		if d.Event == e.ID && !d.AfterReplay && d.gaveUp() {
			clean++
		}
		if d.Event == e.ID && !d.AfterReplay && d.Faulted() {
			faulted++
		}
	}
	if slices.Contains(j.o.Quiet.DeadLetters, e.ID) && !slices.ContainsFunc(j.o.DLQQuiet, func(d broker.DLQEntry) bool { return d.Key == e.ID }) {
		return fmt.Sprintf("%s (user %s, %d cents) is in the consumer's own dead letters %s and was never applied; the harness's faults hit %d of its deliveries, where the broker's policy retries %d, and the consumer gave up on %d that met none:%s",
			e.ID, e.User, e.Amount, when, faulted, j.s.Policy.MaxAttempts-1, clean, j.deliveryLines(e.ID))
	}
	return fmt.Sprintf("%s (user %s, %d cents) is in the dead-letter queue %s and was never applied; the consumer gave up on %d of its deliveries that met no fault of the harness:%s",
		e.ID, e.User, e.Amount, when, clean, j.deliveryLines(e.ID))
}

// itemKind is what an event may do to its user's total.
type itemKind int

const (
	// optional: a healthy event the harness's faults excuse (or, after
	// the replay, any dead-lettered one): applied or not.
	optional itemKind = iota
	// owed: a healthy event dead-lettered by the consumer's own answers:
	// it should have been applied.
	owed
	// forbidden: a poison event with a non-zero amount: never applied.
	forbidden
)

type item struct {
	e    Event
	kind itemKind
}

// maxItems bounds the subsets explain tries (2^maxItems).
const maxItems = 16

// explain finds a subset of items whose amounts add up to d, the
// difference between a total and the total of the events that must be
// applied. Of those it returns the best (as a bit mask): the fewest owed
// items left out plus forbidden items taken, that count as the penalty.
// ok is false when no subset adds up to d.
func explain(items []item, d int64) (pick uint32, penalty int, ok bool) {
	if len(items) > maxItems {
		items = items[:maxItems]
	}
	penalty = -1
	for mask := uint32(0); mask < 1<<len(items); mask++ {
		var sum int64
		pen := 0
		for i, it := range items {
			in := mask&(1<<i) != 0
			if in {
				sum += it.e.Amount
			}
			if (it.kind == owed && !in) || (it.kind == forbidden && in) {
				pen++
			}
		}
		if sum == d && (penalty < 0 || pen < penalty) {
			pick, penalty = mask, pen
		}
	}
	return pick, penalty, penalty >= 0
}

// wrongTotal says of user u's total which healthy events it misses and
// which poison events it holds, by the best explanation of it.
func (j judge) wrongTotal(u string, got, want int64, when string, items []item, pick uint32) string {
	var missing, applied []string
	var lines strings.Builder
	for i, it := range items {
		if i >= maxItems {
			break
		}
		in := pick&(1<<i) != 0
		switch {
		case it.kind == owed && !in:
			missing = append(missing, fmt.Sprintf("%s (%d cents)", it.e.ID, it.e.Amount))
		case it.kind == forbidden && in:
			applied = append(applied, fmt.Sprintf("%s (%d cents)", it.e.ID, it.e.Amount))
		default:
			continue
		}
		lines.WriteString(j.deliveryLines(it.e.ID))
	}
	var parts []string
	if len(missing) > 0 {
		parts = append(parts, "it misses "+strings.Join(missing, ", ")+", dead-lettered though the harness's faults did not spend its attempts")
	}
	if len(applied) > 0 {
		parts = append(parts, "it holds poison "+strings.Join(applied, ", "))
	}
	return fmt.Sprintf("%s: total %d %s, want %d: %s:%s", u, got, when, want, strings.Join(parts, "; "), lines.String())
}
