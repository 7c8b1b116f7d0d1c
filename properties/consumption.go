package properties

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"

	gocmp "github.com/google/go-cmp/cmp"
	"github.com/idemcheck/idemcheck/faults/runner"
	"github.com/idemcheck/idemcheck/faults/scenario"
	"github.com/idemcheck/idemcheck/impl/contract/broker"
	"github.com/idemcheck/idemcheck/impl/contract/store"
	"github.com/idemcheck/idemcheck/impl/reference/consumer"
	"github.com/idemcheck/idemcheck/internal/history"
	"github.com/idemcheck/idemcheck/internal/law"
	"github.com/idemcheck/idemcheck/model/ledger"
)

// The laws of the consumption properties (the registry's IDs, package
// internal/law).
const (
	LawAtMostOnce          = law.AtMostOnce
	LawClaimStoreDedupes   = law.ClaimStoreDedupes
	LawRetentionWindow     = law.RetentionWindow
	LawLedgerUnchanged     = law.LedgerUnchanged
	LawAttemptsCount       = law.AttemptsCount
	LawAtMostMaxAttempts   = law.AtMostMaxAttempts
	LawDLQAfterMaxAttempts = law.DLQAfterMaxAttempts
	LawPoisonAtOnce        = law.PoisonAtOnce
	LawDLQMetadata         = law.DLQMetadata
	LawQuiesces            = law.Quiesces
	LawCreditedOrDLQ       = law.CreditedOrDLQ
	LawHealthyApplied      = law.HealthyApplied
	LawNotStuck            = law.NotStuck
	LawTogether            = law.EffectWithMark
	LawStaleChangesNothing = law.StaleChangesNothing
	LawNotReenqueued       = law.NotReenqueued
	LawDLQOnce             = law.DLQOnce
)

func init() {
	register(Property{Name: law.SingleCredit, Invariant: 1, Kind: scenario.KindConsumption,
		Doc:  law.Doc(law.SingleCredit),
		Laws: lawsOf(law.SingleCredit),
		Pass: func(*runner.Outcome, Monitor) string {
			return "every event credited at most once per consumer, by the claim store alone"
		},
		Monitor: func() Monitor {
			return &creditMonitor{legit: map[string]bool{}, twice: map[string]bool{}, finished: map[string]int64{}}
		}})
	register(Property{Name: law.ReplayUnchanged, Invariant: 2, Kind: scenario.KindConsumption,
		Doc:  law.Doc(law.ReplayUnchanged),
		Laws: lawsOf(law.ReplayUnchanged),
		Pass: func(*runner.Outcome, Monitor) string {
			return "the replay left the ledger unchanged (but for events recovered from the DLQ)"
		},
		Final: finalReplayUnchanged})
	register(Property{Name: law.BoundedAttempts, Invariant: 3, Kind: scenario.KindConsumption,
		Doc:  law.Doc(law.BoundedAttempts),
		Laws: lawsOf(law.BoundedAttempts),
		Pass: func(*runner.Outcome, Monitor) string {
			return "attempts bounded by max_attempts and every DLQ entry accounted for"
		},
		Monitor: func() Monitor {
			return &attemptsMonitor{deliveries: map[msgID]int{}, poisonedAt: map[msgID]map[int]bool{}}
		},
		Final: finalBoundedAttempts})
	register(Property{Name: law.NothingLost, Invariant: 4, Kind: scenario.KindConsumption,
		Doc:  law.Doc(law.NothingLost),
		Laws: lawsOf(law.NothingLost),
		Pass: func(*runner.Outcome, Monitor) string {
			return "every produced event credited exactly once per consumer or dead-lettered"
		},
		Final: finalNothingLost})
	register(Property{Name: law.Atomicity, Invariant: 5, Kind: scenario.KindConsumption,
		Doc:  law.Doc(law.Atomicity),
		Laws: lawsOf(law.Atomicity),
		Pass: func(*runner.Outcome, Monitor) string {
			return "ledger entries and processed records always landed together"
		},
		Monitor: func() Monitor { return &atomicityMonitor{legit: map[ledgerID]bool{}, seen: map[string]bool{}} }})
	register(Property{Name: law.Fencing, Invariant: 6, Kind: scenario.KindConsumption,
		Doc:  law.Doc(law.Fencing),
		Laws: lawsOf(law.Fencing),
		Pass: func(_ *runner.Outcome, m Monitor) string {
			return fmt.Sprintf("%d stale-token call(s), all rejected without effect", m.(*fenceMonitor).fences)
		},
		Monitor: func() Monitor { return &fenceMonitor{latest: map[store.Key]uint64{}} }})
	register(Property{Name: law.ProducerGate, Invariant: 10, Kind: scenario.KindConsumption,
		Doc:   law.Doc(law.ProducerGate),
		Laws:  lawsOf(law.ProducerGate),
		Pass:  func(*runner.Outcome, Monitor) string { return "no committed key was enqueued twice" },
		Final: finalProducerGate})
}

// premature reports whether a cleanup removed a record younger than the
// retention window by the store's own clock.
func premature(rm runner.Removal, retentionMs int64) bool {
	return rm.FinishedAtMs > rm.StoreNowMs-retentionMs
}

// Premature reports whether a removal of a cleanup deleted a record still
// inside the retention window, by the store's clock: for reports.
func Premature(r *runner.ConsumptionResult, rm runner.Removal) bool {
	return premature(rm, r.Config.RetentionMs)
}

// creditMonitor judges single-credit as the run goes.
type creditMonitor struct {
	legit    map[string]bool // consumer/id whose record retention removed in time
	twice    map[string]bool // consumer/id already reported with two entries
	breaches []Breach
	// finished is, for a store that expires processed records itself
	// (store.ExpiryByLibrary), the instant from which each settled key's
	// expiry counts (store.Conventions.ExpiryStartMs); claimed is when
	// each key was last acquired, the start of its settling attempt.
	finished, claimed map[string]int64
}

// libraryExpiry judges a store that removes processed records itself: a
// claim that acquires a key settled before is a removal, legitimate once
// the declared expiry may have passed since the instant it counts from
// (the settling commit, or the claim before it), premature before.
func (m *creditMonitor) libraryExpiry(v *runner.View, a *runner.Action) {
	conv := v.Conventions()
	id := keyID(a.Key)
	if m.finished == nil {
		m.finished = map[string]int64{}
	}
	if m.claimed == nil {
		m.claimed = map[string]int64{}
	}
	switch {
	case a.Kind == runner.ActCommit && a.Commit != nil && a.Err == "" && !a.Stale:
		m.finished[id] = conv.ExpiryStartMs(m.claimed[id], a.Commit.AtMs)
	case a.Kind == runner.ActMark && a.Err == "" && !a.Stale:
		m.finished[id] = conv.ExpiryStartMs(m.claimed[id], v.NowMs())
	case a.Kind == runner.ActClaim && a.Claim != nil && a.Claim.Outcome == store.Acquired:
		m.claimed[id] = a.Claim.AtMs
		from, settled := m.finished[id]
		if !settled {
			return
		}
		delete(m.finished, id)
		if conv.MayHaveExpired(from, a.Claim.AtMs) {
			m.legit[id] = true
			return
		}
		since := "settled"
		if conv.ExpiryFrom == store.ExpiryFromClaim {
			since = "claimed for the attempt that settled it"
		}
		m.breaches = append(m.breaches, breach(LawRetentionWindow, "the library removed a processed record before its declared expiry",
			lineDetail(a, "%s acquired %s at t=%+dms: its record, %s at t=%+dms, was gone %dms after it, before the %dms the store declares (store.Conventions.ExpiryMs)",
				a.Worker, a.Key, a.Claim.AtMs-v.StartMs(), since, from-v.StartMs(), a.Claim.AtMs-from, conv.ExpiryMs)))
	}
}

func (*creditMonitor) BeforeStep(*runner.View, string) {}

func (m *creditMonitor) After(v *runner.View, a *runner.Action) {
	cfg := v.Config()
	if v.Conventions().Expiry == store.ExpiryByLibrary {
		m.libraryExpiry(v, a)
	}
	switch {
	case a.Kind == runner.ActCleanup:
		for _, rm := range a.Removed {
			if !premature(rm, cfg.RetentionMs) {
				m.legit[keyID(rm.Key)] = true
				continue
			}
			m.breaches = append(m.breaches, breach(LawRetentionWindow, "a cleanup removed a record still inside the retention window",
				lineDetail(a, "%s's cleanup removed %s, finished at t=%+dms, when the store's clock read t=%+dms: younger than the %dms retention (the worker's clock read t=%+dms)",
					a.Worker, rm.Key, rm.FinishedAtMs-v.StartMs(), rm.StoreNowMs-v.StartMs(), cfg.RetentionMs, rm.NodeNowMs-v.StartMs())))
		}
	case a.Commit != nil && a.Commit.DuplicatesIgnored > 0 && !m.legit[keyID(a.Key)]:
		m.breaches = append(m.breaches, breach(LawClaimStoreDedupes, "an event's effect was applied a second time",
			lineDetail(a, "%s applied %s's effect a second time; only the ledger's unique constraint stopped the second credit", a.Worker, a.Key)))
	}
	if !a.Kind.WritesStore() {
		return
	}
	// The ledger comes sorted by (consumer, event id): a second entry of an
	// event sits next to its first, so the passing path only compares
	// neighbours.
	led := v.Ledger()
	repeated := false
	for i := 1; i < len(led) && !repeated; i++ {
		repeated = led[i].Consumer == led[i-1].Consumer && led[i].EventID == led[i-1].EventID
	}
	if !repeated {
		return
	}
	counts := map[string]int{}
	for _, e := range led {
		counts[e.Consumer+"/"+e.EventID]++
	}
	for _, id := range slices.Sorted(maps.Keys(counts)) {
		if counts[id] < 2 || m.twice[id] {
			continue
		}
		m.twice[id] = true
		b := breach(LawAtMostOnce, "an event was credited more than once",
			lineDetail(a, "%s has %d ledger entries", id, counts[id]))
		want := map[string]int{}
		for k := range counts {
			want[k] = 1
		}
		b.Diff = gocmp.Diff(want, counts)
		m.breaches = append(m.breaches, b)
	}
}

func (m *creditMonitor) Breaches() []Breach { return m.breaches }

func finalReplayUnchanged(o *runner.Outcome, _ Monitor) []Breach {
	r := o.Consumption
	if !r.Quiesced {
		return nil // not judged: nothing-lost reports it
	}
	if len(r.DLQBeforeReplay) == 0 && slices.Equal(r.LedgerBeforeReplay, r.LedgerAfterReplay) {
		return nil // nothing to recover and nothing changed: the passing path
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
		return cmp.Or(strings.Compare(a.Consumer, b.Consumer), strings.Compare(a.EventID, b.EventID))
	})
	if slices.Equal(want, r.LedgerAfterReplay) {
		return nil // diffs are for failures: the passing path only compares
	}
	d := gocmp.Diff(want, r.LedgerAfterReplay)
	b := breach(LawLedgerUnchanged, "replaying the stream changed the ledger",
		fmt.Sprintf("ledger had %d entries before the replay and %d after", len(r.LedgerBeforeReplay), len(r.LedgerAfterReplay)))
	b.Diff = d
	return []Breach{b}
}

type msgID struct {
	group  string
	offset int64
}

// attemptsMonitor judges bounded-attempts as the run goes: every delivery
// against the count before it, every DLQ entry as it appears.
type attemptsMonitor struct {
	deliveries map[msgID]int
	// poisonedAt holds, per message, the attempts of the deliveries whose
	// handler run returned poison.
	poisonedAt map[msgID]map[int]bool
	dlqSeen    int
	breaches   []Breach
}

func (*attemptsMonitor) BeforeStep(*runner.View, string) {}

func (m *attemptsMonitor) After(v *runner.View, a *runner.Action) {
	limit := v.Config().MaxAttempts
	id := msgID{a.Key.Consumer, a.Offset}
	switch {
	case a.Kind == runner.ActDeliver:
		m.deliveries[id]++
		n := m.deliveries[id]
		if a.Attempts != n {
			m.breaches = append(m.breaches, breach(LawAttemptsCount, "a delivery's attempts did not count deliveries",
				lineDetail(a, "delivery %d of %s (offset %d) shows attempts=%d: attempts must count deliveries", n, a.Key.ID, a.Offset, a.Attempts)))
		}
		if n > limit {
			m.breaches = append(m.breaches, breach(LawAtMostMaxAttempts, "a message was delivered more than max_attempts times",
				lineDetail(a, "%s (offset %d) delivered for the %d. time, beyond max_attempts=%d", a.Key.ID, a.Offset, n, limit)))
		}
	case a.Kind == runner.ActHandle && a.Handler != nil && a.Handler.Kind == consumer.Poison:
		if m.poisonedAt[id] == nil {
			m.poisonedAt[id] = map[int]bool{}
		}
		m.poisonedAt[id][a.Attempts] = true
	case a.Kind == runner.ActNack && a.Handler != nil && a.Handler.Kind == consumer.Poison:
		m.breaches = append(m.breaches, breach(LawPoisonAtOnce, "poison was nacked for retry",
			lineDetail(a, "poison %s was nacked for retry instead of dead-lettered", a.Key.ID)))
	}
	switch a.Kind {
	case runner.ActDeliver, runner.ActNack, runner.ActDeadLetter, runner.ActAdvance:
		// The actions that may route a message to the DLQ.
		dlq := v.DLQ()
		m.breaches = append(m.breaches, m.newEntries(dlq, limit, a)...)
		m.dlqSeen = max(m.dlqSeen, len(dlq))
	}
}

// newEntries judges the DLQ entries that appeared since the last scan.
func (m *attemptsMonitor) newEntries(dlq []broker.DLQEntry, limit int, a *runner.Action) []Breach {
	var out []Breach
	for _, d := range dlq[min(m.dlqSeen, len(dlq)):] {
		out = append(out, m.judgeEntry(d, limit, a)...)
	}
	return out
}

func (m *attemptsMonitor) judgeEntry(d broker.DLQEntry, limit int, a *runner.Action) []Breach {
	id := msgID{d.Group, d.Offset}
	what := fmt.Sprintf("DLQ entry for %s (group %s, offset %d)", d.Key, d.Group, d.Offset)
	at := ""
	if a != nil {
		at = lineOf(a.Line)
	}
	var out []Breach
	if d.Attempts <= 0 || d.LastError == "" {
		return append(out, breach(LawDLQMetadata, "a DLQ entry lacks its context",
			fmt.Sprintf("%s%s lacks attempts or last_error (attempts=%d, last_error=%q)", at, what, d.Attempts, d.LastError)))
	}
	if d.Topic == "" || d.Key == "" {
		out = append(out, breach(LawDLQMetadata, "a DLQ entry lacks its context",
			fmt.Sprintf("%s%s lacks its original topic or key", at, what)))
	}
	switch {
	case d.Poison && !m.poisonedAt[id][d.Attempts]:
		// A poison entry records the delivery that dead-lettered it; a
		// crash before the ack may add deliveries after it.
		out = append(out, breach(LawPoisonAtOnce, "a poison DLQ entry does not match the delivery that found it",
			fmt.Sprintf("%s%s is poison with attempts=%d, but no delivery with that attempt returned poison", at, what, d.Attempts)))
	case !d.Poison && d.Attempts != m.deliveries[id]:
		out = append(out, breach(LawDLQAfterMaxAttempts, "a DLQ entry's attempts disagree with the deliveries made",
			fmt.Sprintf("%s%s says attempts=%d but it was delivered %d time(s)", at, what, d.Attempts, m.deliveries[id])))
	case !d.Poison && d.Attempts != limit:
		out = append(out, breach(LawDLQAfterMaxAttempts, "a message reached the DLQ for retries before max_attempts",
			fmt.Sprintf("%s%s reached the DLQ for retries after %d attempt(s), not max_attempts=%d", at, what, d.Attempts, limit)))
	}
	return out
}

func (m *attemptsMonitor) Breaches() []Breach { return m.breaches }

// finalBoundedAttempts judges the DLQ entries no action was followed by
// (the drain's last ticks).
func finalBoundedAttempts(o *runner.Outcome, mon Monitor) []Breach {
	return mon.(*attemptsMonitor).newEntries(o.Consumption.DLQ, o.Consumption.Config.MaxAttempts, nil)
}

func finalNothingLost(o *runner.Outcome, _ Monitor) []Breach {
	r := o.Consumption
	if !r.Quiesced {
		return []Breach{breach(LawQuiesces, "the system did not quiesce", r.DrainNote)}
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
	got := map[string]int{}
	for _, e := range r.Ledger {
		got[e.Consumer+"/"+e.EventID]++
	}
	var out []Breach
	var lost []string
	for _, w := range want {
		if v := w.Violation(got[w.ID()]); v != "" {
			lost = append(lost, fmt.Sprintf("%s: %s (%d ledger entries)", w.ID(), v, got[w.ID()]))
		}
	}
	if len(lost) > 0 {
		b := breach(LawCreditedOrDLQ, "an event was lost or credited twice", lost...)
		b.Diff = gocmp.Diff(ledger.Credits(want, got), got)
		out = append(out, b)
	}
	// The laws of nothing-lost judged by their one function over the
	// run's history (package internal/history); the others need the
	// store's probes, which a history does not hold.
	out = append(out, history.Judge(r.History(), history.OfProperty(law.NothingLost, nothingLostOwn...)...)...)
	var stuck, gone []string
	for _, a := range r.Actions {
		if a.Kind == runner.ActProbe && (a.Claim == nil || a.Claim.Outcome != store.Acquired) {
			outcome := store.Outcome("no answer")
			if a.Claim != nil {
				outcome = a.Claim.Outcome
			}
			if a.Claim != nil && a.Claim.Answered == store.AlreadyProcessed {
				// A mark-on-claim store says "done" for an event that never
				// was: whoever trusts it acks every redelivery.
				gone = append(gone, lineOf(a.Line)+fmt.Sprintf("%s is lost: its record never completed, yet once every hold had ended the store still answers %s for it (read as %s under mark-on-claim); a consumer that trusts the answer acks every redelivery and the event is never applied%s",
					a.Key, a.Claim.Answered, outcome, errNote(a.Err)))
				continue
			}
			stuck = append(stuck, lineOf(a.Line)+fmt.Sprintf("%s is stuck in processing: a claim once every hold had ended (leases run out, marks expired) answered %s%s", a.Key, outcome, errNote(a.Err)))
		}
	}
	if len(gone) > 0 {
		out = append(out, breach(LawNotStuck, "an event is lost: the store answers it was processed, yet it never was", gone...))
	}
	for _, m := range r.Messages {
		if m.Status == broker.Pending || m.Status == broker.Inflight {
			stuck = append(stuck, fmt.Sprintf("message %s (group %s, offset %d) is still %s", m.Message.Key, m.Message.Group, m.Message.Offset, m.Status))
		}
	}
	if len(stuck) > 0 {
		out = append(out, breach(LawNotStuck, "an event is stuck", stuck...))
	}
	return out
}

// nothingLostOwn are the laws of nothing-lost this file judges itself:
// quiesces and credited-or-dlq from the result's ledger and messages,
// not-stuck from the store's probes.
var nothingLostOwn = []string{LawQuiesces, LawCreditedOrDLQ, LawNotStuck}

func errNote(e string) string {
	if e == "" {
		return ""
	}
	return " (" + e + ")"
}

// atomicityMonitor compares records and ledger after every action that may
// write the store.
type atomicityMonitor struct {
	legit    map[ledgerID]bool // keys whose record retention removed in time
	seen     map[string]bool   // breaches reported, each where first seen
	breaches []Breach
	// processed and credited are reused from action to action.
	processed, credited map[ledgerID]bool
	// finished is, for a store that expires processed records itself,
	// the instant from which the expiry of each record last settled
	// counts (store.Conventions.ExpiryStartMs), from the commit or the
	// record, whichever was seen: a record whose expiry counts from its
	// claim may be gone as soon as its commit lands. claimed is when each
	// key was last acquired.
	finished map[ledgerID]int64
	claimed  map[ledgerID]int64
}

// ledgerID is a consumer-scoped event id, the ledger's unique key.
type ledgerID struct{ consumer, id string }

func (*atomicityMonitor) BeforeStep(*runner.View, string) {}

func (m *atomicityMonitor) After(v *runner.View, a *runner.Action) {
	if !a.Kind.WritesStore() {
		return
	}
	if conv := v.Conventions(); conv.Expiry == store.ExpiryByLibrary {
		m.settles(conv, v, a)
	}
	if a.Kind == runner.ActCleanup {
		for _, rm := range a.Removed {
			if !premature(rm, v.Config().RetentionMs) {
				m.legit[ledgerID{rm.Key.Consumer, rm.Key.ID}] = true
			}
		}
	}
	s := snapshot(v)
	for _, d := range m.unpaired(v.Conventions(), v.NowMs(), s, len(s.Records) <= atomicityScan && len(s.Ledger) <= atomicityScan) {
		m.report(a, d)
	}
}

// settles follows, for a store that expires processed records itself,
// when each key was acquired and settled.
func (m *atomicityMonitor) settles(conv store.Conventions, v *runner.View, a *runner.Action) {
	if m.finished == nil {
		m.finished = map[ledgerID]int64{}
	}
	if m.claimed == nil {
		m.claimed = map[ledgerID]int64{}
	}
	id := ledgerID{a.Key.Consumer, a.Key.ID}
	switch {
	case a.Kind == runner.ActClaim && a.Claim != nil && a.Claim.Outcome == store.Acquired:
		m.claimed[id] = a.Claim.AtMs
	case a.Kind == runner.ActCommit && a.Commit != nil && a.Err == "" && !a.Stale:
		m.finished[id] = conv.ExpiryStartMs(m.claimed[id], a.Commit.AtMs)
	case a.Kind == runner.ActMark && a.Err == "" && !a.Stale:
		m.finished[id] = conv.ExpiryStartMs(m.claimed[id], v.NowMs())
	}
}

// atomicityScan is the size of store up to which the atomicity monitor
// pairs entries and records by scanning rather than through maps: a check's
// store holds a handful of each, and hashing them after every write cost
// more than comparing them all.
const atomicityScan = 16

// unpaired describes every ledger entry without its processed record and
// every processed record without its entry (but for records legitimately
// cleaned up, or expired by a library that declares it expires them),
// entries first, each in store order; scan pairs them without maps, the
// same way.
func (m *atomicityMonitor) unpaired(conv store.Conventions, nowMs int64, s snap, scan bool) []string {
	expires := conv.Expiry == store.ExpiryByLibrary
	if expires {
		// Settle times are kept only for a store that expires its records
		// itself: its record may vanish while its entry stays.
		if m.finished == nil {
			m.finished = map[ledgerID]int64{}
		}
		for _, r := range s.Records {
			if r.State == store.Processed {
				m.finished[ledgerID{r.Key.Consumer, r.Key.ID}] = conv.ExpiryStartMs(r.StartedAtMs, r.FinishedAtMs)
			}
		}
	}
	excused := func(id ledgerID) bool {
		if m.legit[id] {
			return true
		}
		from, ok := m.finished[id]
		return expires && ok && conv.MayHaveExpired(from, nowMs) // the library may have expired it, as it declares
	}
	var out []string
	if scan {
		for _, e := range s.Ledger {
			if !slices.ContainsFunc(s.Records, func(r store.Record) bool {
				return r.State == store.Processed && r.Key.Consumer == e.Consumer && r.Key.ID == e.EventID
			}) && !excused(ledgerID{e.Consumer, e.EventID}) {
				out = append(out, fmt.Sprintf("ledger entry %s/%s has no processed record", e.Consumer, e.EventID))
			}
		}
		for _, r := range s.Records {
			if r.State == store.Processed && !slices.ContainsFunc(s.Ledger, func(e store.Entry) bool {
				return e.Consumer == r.Key.Consumer && e.EventID == r.Key.ID
			}) {
				out = append(out, fmt.Sprintf("record %s is processed but the ledger has no entry for it", keyID(r.Key)))
			}
		}
		return out
	}
	if m.processed == nil {
		m.processed, m.credited = map[ledgerID]bool{}, map[ledgerID]bool{}
	}
	processed, credited := m.processed, m.credited
	clear(processed)
	clear(credited)
	for _, r := range s.Records {
		if r.State == store.Processed {
			processed[ledgerID{r.Key.Consumer, r.Key.ID}] = true
		}
	}
	for _, e := range s.Ledger {
		id := ledgerID{e.Consumer, e.EventID}
		credited[id] = true
		if !processed[id] && !excused(id) {
			out = append(out, fmt.Sprintf("ledger entry %s/%s has no processed record", e.Consumer, e.EventID))
		}
	}
	for _, r := range s.Records {
		if r.State == store.Processed && !credited[ledgerID{r.Key.Consumer, r.Key.ID}] {
			out = append(out, fmt.Sprintf("record %s is processed but the ledger has no entry for it", keyID(r.Key)))
		}
	}
	return out
}

func (m *atomicityMonitor) report(a *runner.Action, detail string) {
	if m.seen[detail] {
		return
	}
	m.seen[detail] = true
	m.breaches = append(m.breaches, breach(LawTogether, "an effect and its processed mark did not land together",
		fmt.Sprintf("after line %d: %s", a.Line, detail)))
}

func (m *atomicityMonitor) Breaches() []Breach { return m.breaches }

// fenceMonitor tracks the newest token issued per key and diffs the store
// around every step of a worker whose token was superseded.
type fenceMonitor struct {
	latest   map[store.Key]uint64
	worker   string // the stale worker about to step, if any
	before   snap
	fences   int
	breaches []Breach
}

func (m *fenceMonitor) BeforeStep(v *runner.View, worker string) {
	m.worker = ""
	key, token := v.Held(worker)
	if token != 0 && token < m.latest[key] {
		m.worker, m.before = worker, snapshot(v)
	}
}

func (m *fenceMonitor) After(v *runner.View, a *runner.Action) {
	if a.Kind == runner.ActClaim && a.Claim != nil && a.Claim.Outcome == store.Acquired {
		m.latest[a.Key] = max(m.latest[a.Key], a.Claim.Token)
	}
	if m.worker == "" || a.Worker != m.worker {
		return
	}
	m.worker = ""
	switch a.Kind {
	case runner.ActCommit, runner.ActEffect, runner.ActMark, runner.ActFail:
	default:
		return
	}
	latest := m.latest[a.Key]
	if a.Token == 0 || a.Token >= latest {
		return
	}
	m.fences++
	diff := ""
	if after := snapshot(v); !m.before.equal(after) {
		diff = gocmp.Diff(m.before, after) // diffs are for failures
	}
	rejected := a.Err != "" || a.Stale
	// A store that declares a stale release a silent no-op (its
	// convention) answers nil; changing nothing is all the law asks of it.
	silent := a.Kind == runner.ActFail && v.Conventions().StaleRelease == store.StaleReleaseNoOp
	if (rejected || silent) && diff == "" {
		return
	}
	b := breach(LawStaleChangesNothing, "a call with a stale fencing token was accepted or changed the store",
		lineDetail(a, "%s used token %d on %s after token %d was issued: rejected=%t, changed the store=%t", a.Worker, a.Token, a.Key, latest, rejected, diff != ""))
	b.Diff = diff
	m.breaches = append(m.breaches, b)
}

func (m *fenceMonitor) Breaches() []Breach { return m.breaches }

// finalProducerGate judges producer-gate's laws, each by its one function
// over the run's history (package internal/history).
func finalProducerGate(o *runner.Outcome, _ Monitor) []Breach {
	return history.Judge(o.Consumption.History(), history.OfProperty(law.ProducerGate)...)
}
