package properties

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/google/go-cmp/cmp"
	"github.com/idemcheck/idemcheck/faults/runner"
	"github.com/idemcheck/idemcheck/faults/scenario"
	"github.com/idemcheck/idemcheck/impl/contract/broker"
	"github.com/idemcheck/idemcheck/impl/contract/store"
	"github.com/idemcheck/idemcheck/impl/reference/consumer"
	"github.com/idemcheck/idemcheck/model/ledger"
)

func init() {
	register(Property{Name: "single-credit", Invariant: 1, Kind: scenario.KindConsumption,
		Doc:   "each event is credited at most once per consumer, and the ledger's unique constraint never has to stop a second credit the claim store let through",
		Check: checkSingleCredit})
	register(Property{Name: "replay-unchanged", Invariant: 2, Kind: scenario.KindConsumption,
		Doc:   "replaying the whole stream after the system quiesced leaves the ledger unchanged: no entry changes or repeats, and only events that sat in the DLQ may be credited by the replay",
		Check: checkReplayUnchanged})
	register(Property{Name: "bounded-attempts", Invariant: 3, Kind: scenario.KindConsumption,
		Doc:   "attempts count deliveries; no message is delivered more than max_attempts times; retries reach the DLQ after exactly max_attempts, poison at once; DLQ entries carry attempts and last_error",
		Check: checkBoundedAttempts})
	register(Property{Name: "nothing-lost", Invariant: 4, Kind: scenario.KindConsumption,
		Doc:   "once the system quiesces every produced event is credited exactly once per consumer or sits in its DLQ, and no record is stuck in processing",
		Check: checkNothingLost})
	register(Property{Name: "atomicity", Invariant: 5, Kind: scenario.KindConsumption,
		Doc:   "at no point is there a ledger entry without its processed record, or a processed record without its ledger entry",
		Check: checkAtomicity})
	register(Property{Name: "fencing", Invariant: 6, Kind: scenario.KindConsumption,
		Doc:   "a commit, mark or release carrying a stale fencing token is rejected and changes nothing",
		Check: checkFencing})
	register(Property{Name: "producer-gate", Invariant: 10, Kind: scenario.KindConsumption,
		Doc:   "a key whose produce is COMMITTED is never enqueued again, by the producer or by a DLQ publish",
		Check: checkProducerGate})
}

func cons(o *runner.Outcome) *runner.ConsumptionResult { return o.Consumption }

func checkSingleCredit(o *runner.Outcome) Verdict {
	const name = "single-credit"
	r := cons(o)
	var details []string
	counts := map[string]int{}
	for _, e := range r.Ledger {
		counts[e.Consumer+"/"+e.EventID]++
	}
	for _, k := range sortedKeys(counts) {
		if counts[k] > 1 {
			details = append(details, fmt.Sprintf("%s has %d ledger entries", k, counts[k]))
		}
	}
	legit := map[string]bool{}
	for _, rm := range r.Removed {
		if rm.Premature {
			details = append(details, fmt.Sprintf("line %d: %s's cleanup removed %s, finished at t=%+dms, when the store's clock read t=%+dms: younger than the %dms retention (the worker's clock read t=%+dms)",
				rm.Line, rm.Worker, rm.Key, rm.FinishedAtMs-r.StartMs, rm.StoreNowMs-r.StartMs, r.Config.RetentionMs, rm.NodeNowMs-r.StartMs))
		} else {
			legit[rm.Key.Consumer+"/"+rm.Key.ID] = true
		}
	}
	for _, a := range r.Actions {
		if a.Commit != nil && a.Commit.DuplicatesIgnored > 0 && !legit[a.Key.Consumer+"/"+a.Key.ID] {
			details = append(details, fmt.Sprintf("line %d: %s applied %s's effect a second time; only the ledger's unique constraint stopped the second credit", a.Line, a.Worker, a.Key))
		}
	}
	if len(details) == 0 {
		return pass(name, "every event credited at most once per consumer, by the claim store alone")
	}
	v := fail(name, "an event was credited, or applied, more than once", details...)
	// The model's ledger holds each credited event once.
	want := map[string]int{}
	for k := range counts {
		want[k] = 1
	}
	v.Diff = cmp.Diff(want, counts)
	return v
}

func checkReplayUnchanged(o *runner.Outcome) Verdict {
	const name = "replay-unchanged"
	r := cons(o)
	if !r.Quiesced {
		return pass(name, "not judged: the system did not quiesce before the replay (nothing-lost reports it)")
	}
	// An event dead-lettered before the replay may be credited by it: the
	// replay is how an operator recovers it. Everything else must stay as it was.
	dead := map[string]bool{}
	for _, d := range r.DLQBeforeReplay {
		dead[d.Group+"/"+d.Key] = true
	}
	before := map[string]bool{}
	for _, e := range r.LedgerBeforeReplay {
		before[e.Consumer+"/"+e.EventID] = true
	}
	want := slices.Clone(r.LedgerBeforeReplay)
	for _, e := range r.LedgerAfterReplay {
		if id := e.Consumer + "/" + e.EventID; dead[id] && !before[id] {
			want = append(want, e)
			before[id] = true
		}
	}
	slices.SortStableFunc(want, func(a, b store.Entry) int {
		if c := strings.Compare(a.Consumer, b.Consumer); c != 0 {
			return c
		}
		return strings.Compare(a.EventID, b.EventID)
	})
	if d := cmp.Diff(want, r.LedgerAfterReplay); d != "" {
		v := fail(name, "replaying the stream changed the ledger",
			fmt.Sprintf("ledger had %d entries before the replay and %d after", len(r.LedgerBeforeReplay), len(r.LedgerAfterReplay)))
		v.Diff = d
		return v
	}
	return pass(name, "the replay left the ledger unchanged (but for events recovered from the DLQ)")
}

type msgID struct {
	group  string
	offset int64
}

func checkBoundedAttempts(o *runner.Outcome) Verdict {
	const name = "bounded-attempts"
	r := cons(o)
	max := r.Config.MaxAttempts
	var details []string
	deliveries := map[msgID]int{}
	// poisonedAt holds, per message, the attempts of the deliveries whose
	// handler run returned poison.
	poisonedAt := map[msgID]map[int]bool{}
	for _, a := range r.Actions {
		id := msgID{a.Key.Consumer, a.Offset}
		switch {
		case a.Kind == "deliver":
			deliveries[id]++
			if a.Attempts != deliveries[id] {
				details = append(details, fmt.Sprintf("line %d: delivery %d of %s (offset %d) shows attempts=%d: attempts must count deliveries", a.Line, deliveries[id], a.Key.ID, a.Offset, a.Attempts))
			}
			if a.Attempts > max {
				details = append(details, fmt.Sprintf("line %d: %s (offset %d) delivered for the %d. time, beyond max_attempts=%d", a.Line, a.Key.ID, a.Offset, deliveries[id], max))
			}
		case a.Kind == string(consumer.ActHandle) && a.Handler != nil && a.Handler.Kind == consumer.Poison:
			if poisonedAt[id] == nil {
				poisonedAt[id] = map[int]bool{}
			}
			poisonedAt[id][a.Attempts] = true
		case a.Kind == string(consumer.ActNack) && a.Handler != nil && a.Handler.Kind == consumer.Poison:
			details = append(details, fmt.Sprintf("line %d: poison %s was nacked for retry instead of dead-lettered", a.Line, a.Key.ID))
		}
	}
	seen := map[msgID]bool{}
	for _, d := range r.DLQ {
		id := msgID{d.Group, d.Offset}
		what := fmt.Sprintf("DLQ entry for %s (group %s, offset %d)", d.Key, d.Group, d.Offset)
		if seen[id] {
			continue // duplicates are the producer gate's to report
		}
		seen[id] = true
		if d.Attempts <= 0 || d.LastError == "" {
			details = append(details, fmt.Sprintf("%s lacks attempts or last_error (attempts=%d, last_error=%q)", what, d.Attempts, d.LastError))
			continue
		}
		if d.Topic == "" || d.Key == "" {
			details = append(details, fmt.Sprintf("%s lacks its original topic or key", what))
		}
		switch {
		case d.Poison && !poisonedAt[id][d.Attempts]:
			// A poison entry records the delivery that dead-lettered it; a
			// crash before the ack may add deliveries after it.
			details = append(details, fmt.Sprintf("%s is poison with attempts=%d, but no delivery with that attempt returned poison", what, d.Attempts))
		case !d.Poison && d.Attempts != deliveries[id]:
			details = append(details, fmt.Sprintf("%s says attempts=%d but it was delivered %d time(s)", what, d.Attempts, deliveries[id]))
		case !d.Poison && d.Attempts != max:
			details = append(details, fmt.Sprintf("%s reached the DLQ for retries after %d attempt(s), not max_attempts=%d", what, d.Attempts, max))
		}
	}
	if len(details) == 0 {
		return pass(name, "attempts bounded by max_attempts and every DLQ entry accounted for")
	}
	return fail(name, "a message's attempts or DLQ entry broke the retry policy", details...)
}

func checkNothingLost(o *runner.Outcome) Verdict {
	const name = "nothing-lost"
	r := cons(o)
	if !r.Quiesced {
		return fail(name, "the system did not quiesce", r.DrainNote)
	}
	var events []ledger.Event
	for _, e := range r.Events {
		events = append(events, ledger.Event{ID: e.ID, Poison: e.Fate == scenario.FatePoison})
	}
	produced, dead := map[string]bool{}, map[string]bool{}
	for _, m := range r.Messages {
		produced[m.Message.Key] = true
	}
	for _, d := range r.DLQ {
		dead[d.Group+"/"+d.Key] = true
	}
	want := ledger.Expected(r.Config.Consumers, events, produced, dead)
	var details []string
	got := map[string]int{}
	for _, e := range r.Ledger {
		got[e.Consumer+"/"+e.EventID]++
	}
	for _, w := range want {
		if v := w.Violation(got[w.ID()]); v != "" {
			details = append(details, fmt.Sprintf("%s: %s (%d ledger entries)", w.ID(), v, got[w.ID()]))
		}
	}
	for _, p := range r.Probes {
		if p.Outcome != store.Acquired {
			details = append(details, fmt.Sprintf("%s is stuck in processing: a claim after every lease expired answered %s%s", p.Key, p.Outcome, errNote(p.Err)))
		}
	}
	for _, m := range r.Messages {
		if m.Status == broker.Pending || m.Status == broker.Inflight {
			details = append(details, fmt.Sprintf("message %s (group %s, offset %d) is still %s", m.Message.Key, m.Message.Group, m.Message.Offset, m.Status))
		}
	}
	if len(details) == 0 {
		return pass(name, "every produced event credited exactly once per consumer or dead-lettered")
	}
	v := fail(name, "an event was lost, credited twice, or stuck", details...)
	v.Diff = cmp.Diff(ledger.Credits(want, got), got)
	return v
}

func errNote(e string) string {
	if e == "" {
		return ""
	}
	return " (" + e + ")"
}

func checkAtomicity(o *runner.Outcome) Verdict {
	const name = "atomicity"
	r := cons(o)
	if len(r.Breach) == 0 {
		return pass(name, "ledger entries and processed records always landed together")
	}
	var details []string
	for _, b := range r.Breach {
		details = append(details, fmt.Sprintf("after line %d: %s", b.Line, b.Detail))
	}
	return fail(name, "an effect and its processed mark did not land together", details...)
}

func checkFencing(o *runner.Outcome) Verdict {
	const name = "fencing"
	r := cons(o)
	var details []string
	diff := ""
	for _, f := range r.Fences {
		if f.Rejected && f.Diff == "" {
			continue
		}
		details = append(details, fmt.Sprintf("line %d: %s used token %d on %s after token %d was issued: rejected=%t, changed the store=%t",
			f.Line, f.Worker, f.Token, f.Key, f.LatestToken, f.Rejected, f.Diff != ""))
		if diff == "" {
			diff = f.Diff
		}
	}
	if len(details) == 0 {
		return pass(name, fmt.Sprintf("%d stale-token call(s), all rejected without effect", len(r.Fences)))
	}
	v := fail(name, "a call with a stale fencing token was accepted or changed the store", details...)
	v.Diff = diff
	return v
}

func checkProducerGate(o *runner.Outcome) Verdict {
	const name = "producer-gate"
	r := cons(o)
	var details []string
	if len(r.Config.Consumers) > 0 {
		group := r.Config.Consumers[0]
		produced := map[string][]int64{}
		for _, m := range r.Messages {
			if m.Message.Group == group && m.Message.Origin == broker.Produced {
				k := m.Message.Tenant + "/" + m.Message.Topic + "/" + m.Message.Key
				produced[k] = append(produced[k], m.Message.Offset)
			}
		}
		for _, k := range sortedKeys(produced) {
			if offs := produced[k]; len(offs) > 1 {
				details = append(details, fmt.Sprintf("%s was enqueued by the producer %d times (offsets %v) after its produce committed", k, len(offs), offs))
			}
		}
	}
	dlq := map[msgID]int{}
	for _, d := range r.DLQ {
		dlq[msgID{d.Group, d.Offset}]++
	}
	ids := make([]msgID, 0, len(dlq))
	for id := range dlq {
		ids = append(ids, id)
	}
	slices.SortFunc(ids, func(a, b msgID) int {
		if c := strings.Compare(a.group, b.group); c != 0 {
			return c
		}
		return int(a.offset - b.offset)
	})
	for _, id := range ids {
		if dlq[id] > 1 {
			details = append(details, fmt.Sprintf("group %s offset %d was dead-lettered %d times", id.group, id.offset, dlq[id]))
		}
	}
	if len(details) == 0 {
		return pass(name, "no committed key was enqueued twice")
	}
	return fail(name, "a committed key was enqueued again", details...)
}

func sortedKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }
