package compact

import (
	"fmt"

	"github.com/idemcheck/idemcheck/impl/contract/broker"
	"github.com/idemcheck/idemcheck/internal/history"
	"github.com/idemcheck/idemcheck/internal/law"
	"github.com/idemcheck/idemcheck/properties/coverage"
)

// Law is a law of the consumption properties, as the compact judge checks
// it: the properties' monitors and final checks (package properties)
// restated over the compact state.
type Law uint8

// The laws, by the properties' names (Laws lists them).
const (
	LawNone Law = iota
	LawAtMostOnce
	LawClaimStoreDedupes
	LawRetentionWindow
	LawLedgerUnchanged
	LawAttemptsCount
	LawAtMostMaxAttempts
	LawDLQAfterMaxAttempts
	LawPoisonAtOnce
	LawDLQMetadata
	LawQuiesces
	LawCreditedOrDLQ
	LawNotStuck
	LawTogether
	LawStaleChangesNothing
	LawNotReenqueued
	LawDLQOnce
	LawHealthyApplied
	numLaws
)

// Laws maps each law to its property and law IDs in the law registry
// (package internal/law), where their descriptions live.
var Laws = [numLaws][2]string{
	LawAtMostOnce:          {law.SingleCredit, law.AtMostOnce},
	LawClaimStoreDedupes:   {law.SingleCredit, law.ClaimStoreDedupes},
	LawRetentionWindow:     {law.SingleCredit, law.RetentionWindow},
	LawLedgerUnchanged:     {law.ReplayUnchanged, law.LedgerUnchanged},
	LawAttemptsCount:       {law.BoundedAttempts, law.AttemptsCount},
	LawAtMostMaxAttempts:   {law.BoundedAttempts, law.AtMostMaxAttempts},
	LawDLQAfterMaxAttempts: {law.BoundedAttempts, law.DLQAfterMaxAttempts},
	LawPoisonAtOnce:        {law.BoundedAttempts, law.PoisonAtOnce},
	LawDLQMetadata:         {law.BoundedAttempts, law.DLQMetadata},
	LawQuiesces:            {law.NothingLost, law.Quiesces},
	LawCreditedOrDLQ:       {law.NothingLost, law.CreditedOrDLQ},
	LawNotStuck:            {law.NothingLost, law.NotStuck},
	LawTogether:            {law.Atomicity, law.EffectWithMark},
	LawStaleChangesNothing: {law.Fencing, law.StaleChangesNothing},
	LawNotReenqueued:       {law.ProducerGate, law.NotReenqueued},
	LawDLQOnce:             {law.ProducerGate, law.DLQOnce},
	LawHealthyApplied:      {law.NothingLost, law.HealthyApplied},
}

// String is the law's "property/law" id.
func (l Law) String() string {
	if l == LawNone || l >= numLaws {
		return "none"
	}
	return Laws[l][0] + "/" + Laws[l][1]
}

// Judge checks the laws as a compact run goes and records the coverage
// situations it reaches. The zero Judge checks nothing; use NewJudge.
type Judge = judge

type judge struct {
	on       [numLaws]bool
	coverage bool
	// broken is the first law broken (LawNone: none).
	broken Law
}

// NewJudge returns a judge of the laws on (nil: every law) that records
// coverage when asked to.
func NewJudge(on func(Law) bool, coverage bool) *Judge {
	j := &judge{coverage: coverage}
	for l := LawNone + 1; l < numLaws; l++ {
		j.on[l] = on == nil || on(l)
	}
	return j
}

// Broken returns the first law broken so far (LawNone: none).
func (j *judge) Broken() Law { return j.broken }

// Reset forgets the breach, for the next run.
func (j *judge) Reset() { j.broken = LawNone }

func (j *judge) breach(l Law) {
	if j.on[l] && j.broken == LawNone {
		j.broken = l
	}
}

// The coverage situations, by their bit in a coverage.Set.
var (
	situationTakeover           = coverage.Set(0).With(coverage.TakeoverAfterLeaseExpiry)
	situationStaleCommit        = coverage.Set(0).With(coverage.StaleCommitRefused)
	situationCrashBeforeClaim   = coverage.Set(0).With(coverage.CrashBeforeClaim)
	situationCrashAfterClaim    = coverage.Set(0).With(coverage.CrashAfterClaim)
	situationCrashAfterHandle   = coverage.Set(0).With(coverage.CrashAfterHandle)
	situationCrashAfterCommit   = coverage.Set(0).With(coverage.CrashAfterCommit)
	situationCrashAfterFail     = coverage.Set(0).With(coverage.CrashAfterFail)
	situationCrashAfterDLQ      = coverage.Set(0).With(coverage.CrashAfterDeadLetter)
	situationAfterAckTimeout    = coverage.Set(0).With(coverage.RedeliveryAfterAckTimeout)
	situationAfterNack          = coverage.Set(0).With(coverage.RedeliveryAfterNack)
	situationMaxAttempts        = coverage.Set(0).With(coverage.MaxAttemptsReached)
	situationPoisonToDLQ        = coverage.Set(0).With(coverage.PoisonToDLQ)
	situationCleanupPending     = coverage.Set(0).With(coverage.CleanupWhileRedeliveryPending)
	situationReplayRecovers     = coverage.Set(0).With(coverage.ReplayRecoversDLQ)
	situationDuplicate          = coverage.Set(0).With(coverage.Duplicate2To10)
	situationConcurrentClaims   = coverage.Set(0).With(coverage.ConcurrentClaims)
	situationStaleRelease       = coverage.Set(0).With(coverage.TakeoverThenStaleRelease)
	situationCleanupStaleCommit = coverage.Set(0).With(coverage.CleanupReclaimStaleCommit)
)

func (j *judge) cov(s *State, sit coverage.Set) {
	if j.coverage {
		s.cov |= uint64(sit)
	}
}

// Coverage returns the situations s's run reached.
func (s *State) Coverage() coverage.Set { return coverage.Set(s.cov) }

// --- bounded-attempts ---

func (j *judge) delivered(s *State, cfg *Config, wi int, e *entry) {
	e.deliveries++
	if e.attempts != e.deliveries {
		j.breach(LawAttemptsCount)
	}
	if int(e.deliveries) > cfg.MaxAttempts {
		j.breach(LawAtMostMaxAttempts)
	}
	w := &s.workers[wi]
	if w.attempts >= 2 {
		switch w.lastErr {
		case reasonNone:
		case reasonAckTimout:
			j.cov(s, situationAfterAckTimeout)
		default:
			j.cov(s, situationAfterNack)
		}
	}
	if int(w.attempts) >= cfg.MaxAttempts {
		j.cov(s, situationMaxAttempts)
	}
}

func (j *judge) poisoned(s *State, cfg *Config, wi int) {
	w := &s.workers[wi]
	e := s.ent(cfg, w.offset, cfg.Workers[wi].Group)
	e.poisoned |= 1 << w.attempts
}

func (j *judge) nacking(s *State, _ *Config, wi int) {
	if s.workers[wi].result == resPoison {
		j.breach(LawPoisonAtOnce)
	}
}

// dlqEntry judges a DLQ entry as it appears.
func (j *judge) dlqEntry(s *State, cfg *Config, d dlqEntry) {
	e := s.ent(cfg, d.offset, int(d.group))
	switch {
	case d.attempts == 0 || d.lastErr == reasonNone:
		j.breach(LawDLQMetadata)
	case d.poison && e.poisoned&(1<<d.attempts) == 0:
		j.breach(LawPoisonAtOnce)
	case !d.poison && (d.attempts != e.deliveries || int(d.attempts) != cfg.MaxAttempts):
		j.breach(LawDLQAfterMaxAttempts)
	}
}

// --- nothing-lost/healthy-applied ---

// locked notes a claim worker wi found locked: a fault of the harness
// unless the claim's holder settled its delivery and left the record in
// processing.
func (j *judge) locked(s *State, cfg *Config, wi int) {
	w := &s.workers[wi]
	if !s.recs[cfg.Workers[wi].Group][w.event].settled {
		w.faulted = true
	}
}

// settling notes worker wi settling its delivery: a nack or dead-letter
// (giving) with no fault of the harness (its ack deadline passed while it
// held it counts as one) gives up on the event; a holder of the claim
// settling leaves it settled.
func (j *judge) settling(s *State, cfg *Config, wi int, giving bool) {
	w := &s.workers[wi]
	g, ev := cfg.Workers[wi].Group, int(w.event)
	if giving {
		if s.now >= w.at+cfg.AckTimeoutMs {
			w.faulted = true
		}
		if !w.faulted {
			s.ent(cfg, w.offset, g).gaveUp = true
		}
	}
	if r := &s.recs[g][ev]; w.token != 0 && r.state != recNone && r.token == w.token {
		r.settled = true
	}
}

// judgeHealthy judges, on the state before the replay, that a healthy
// event sits uncredited in a group's DLQ only when the harness's faults
// spent the attempts of a message of it (excused).
func (s *State) judgeHealthy(cfg *Config, j *judge, ledger *[MaxGroups][MaxEvents]uint8, excused, dead *[MaxGroups][MaxEvents]bool) {
	var produced [MaxEvents]bool
	for _, m := range s.msgs {
		produced[m.event] = true
	}
	for g := range cfg.Groups {
		for ev, e := range cfg.Events {
			if e.Poison || !produced[ev] || ledger[g][ev] > 0 || !dead[g][ev] {
				continue
			}
			if !excused[g][ev] {
				j.breach(LawHealthyApplied)
			}
		}
	}
}

// --- single-credit, atomicity, fencing ---

// storeWritten judges the store after an action that may write it.
func (j *judge) storeWritten(s *State, cfg *Config) {
	for g := range cfg.Groups {
		for ev := range cfg.Events {
			n := s.ledger[g][ev]
			if n > 1 {
				j.breach(LawAtMostOnce)
			}
			processed := s.recs[g][ev].state == recProcessed
			if n > 0 && !processed && !s.legit[g][ev] {
				j.breach(LawTogether)
			}
			if processed && n == 0 {
				j.breach(LawTogether)
			}
		}
	}
}

// removing judges a record a cleanup removes.
func (j *judge) removing(s *State, cfg *Config, g, ev int) {
	if s.recs[g][ev].finished > s.now-cfg.RetentionMs {
		j.breach(LawRetentionWindow)
		return
	}
	s.legit[g][ev] = true
}

func (j *judge) cleaned(s *State, cfg *Config, removed uint64) {
	if !j.coverage {
		return
	}
	for wi := range cfg.Workers {
		w := &s.workers[wi]
		if w.stage != stageIdle && w.hold && removed&(1<<(cfg.Workers[wi].Group*MaxEvents+int(w.event))) != 0 {
			w.cleaned = true
		}
	}
	for off, m := range s.msgs {
		for g := range cfg.Groups {
			e := s.ent(cfg, int32(off), g)
			if (e.status == stPending || e.status == stInflight) && removed&(1<<(g*MaxEvents+int(m.event))) != 0 {
				j.cov(s, situationCleanupPending)
				return
			}
		}
	}
}

// committing judges a commit about to land.
func (j *judge) committing(s *State, cfg *Config, wi int) {
	w := &s.workers[wi]
	g, ev := cfg.Workers[wi].Group, int(w.event)
	if w.token < s.latest[g][ev] {
		j.breach(LawStaleChangesNothing) // a stale token accepted
	}
	if s.ledger[g][ev] > 0 && !s.legit[g][ev] {
		j.breach(LawClaimStoreDedupes)
	}
}

func (j *judge) failing(s *State, cfg *Config, wi int) {
	w := &s.workers[wi]
	if w.token < s.latest[cfg.Workers[wi].Group][w.event] {
		j.breach(LawStaleChangesNothing)
	}
}

// --- coverage of the pipeline ---

func (j *judge) claiming(s *State, cfg *Config, wi int) {
	if !j.coverage {
		return
	}
	w := &s.workers[wi]
	for oi := range cfg.Workers {
		o := &s.workers[oi]
		if oi != wi && o.stage != stageIdle && cfg.Workers[oi].Group == cfg.Workers[wi].Group && o.event == w.event {
			j.cov(s, situationConcurrentClaims)
			return
		}
	}
}

func (j *judge) acquired(s *State, cfg *Config, wi int) {
	w := &s.workers[wi]
	if j.coverage {
		for oi := range cfg.Workers {
			o := &s.workers[oi]
			if oi == wi || o.stage == stageIdle || !o.hold || cfg.Workers[oi].Group != cfg.Workers[wi].Group || o.event != w.event {
				continue
			}
			if s.now-o.holdAt >= cfg.LeaseMs {
				o.taken = true
				j.cov(s, situationTakeover)
			}
			if o.cleaned {
				o.reclam = true
			}
		}
	}
	w.hold, w.holdAt, w.taken, w.cleaned, w.reclam = true, s.now, false, false, false
}

func (j *judge) staleCommit(s *State, _ *Config, wi int) {
	w := &s.workers[wi]
	j.cov(s, situationStaleCommit)
	if w.hold && w.reclam {
		j.cov(s, situationCleanupStaleCommit)
	}
	w.hold = false
}

func (j *judge) committed(s *State, cfg *Config, wi int) {
	w := &s.workers[wi]
	if w.hold && w.reclam {
		j.cov(s, situationCleanupStaleCommit)
	}
	w.hold = false
	if !j.coverage || w.origin != originReplayed {
		return
	}
	for _, d := range s.dlq {
		if int(d.group) == cfg.Workers[wi].Group && s.msgs[d.offset].event == w.event {
			j.cov(s, situationReplayRecovers)
			return
		}
	}
}

func (j *judge) staleFail(s *State, _ *Config, wi int) { j.released(s, &s.workers[wi]) }

func (j *judge) released(s *State, w *worker) {
	if w.hold && w.taken {
		j.cov(s, situationStaleRelease)
	}
	w.hold = false
}

// crashed names the pipeline point a busy worker crashed at.
func (j *judge) crashed(s *State, w *worker) {
	if w.stage == stageIdle {
		return
	}
	switch w.last {
	case 0:
		j.cov(s, situationCrashBeforeClaim)
	case repClaimAcquired, repClaimProcessed, repClaimLocked:
		if w.hold {
			j.cov(s, situationCrashAfterClaim)
		}
	case repHandleOK, repHandleTransient, repHandlePoison:
		j.cov(s, situationCrashAfterHandle)
	case repCommit, repCommitStale:
		j.cov(s, situationCrashAfterCommit)
	case repFail, repFailStale:
		j.cov(s, situationCrashAfterFail)
	case repDeadLetter:
		j.cov(s, situationCrashAfterDLQ)
	}
}

// --- the end of a run ---

// Finish ends s's run as the runner's Finish does — drain, replay the
// stream, drain again, probe every record left in processing — and judges
// the final laws. s is changed.
func (s *State) Finish(cfg *Config, j *judge) {
	if !s.Drain(cfg, j) {
		j.breach(LawQuiesces)
		s.probe(cfg, j)
		return
	}
	before := s.ledger
	var deadBefore, excused [MaxGroups][MaxEvents]bool
	for _, d := range s.dlq {
		deadBefore[d.group][s.msgs[d.offset].event] = true
		if !d.poison && !s.ent(cfg, d.offset, int(d.group)).gaveUp {
			excused[d.group][s.msgs[d.offset].event] = true
		}
	}
	s.replay(cfg)
	quiesced := s.Drain(cfg, j)
	if !quiesced {
		j.breach(LawQuiesces)
	}
	s.probe(cfg, j)
	if quiesced {
		for g := range cfg.Groups {
			for ev := range cfg.Events {
				b, a := before[g][ev], s.ledger[g][ev]
				if a != b && !(b == 0 && a == 1 && deadBefore[g][ev]) {
					j.breach(LawLedgerUnchanged)
				}
			}
		}
		s.judgeNothingLost(cfg, j)
		s.judgeHealthy(cfg, j, &before, &excused, &deadBefore)
	}
	s.judgeProducerGate(cfg, j)
}

// probe claims every record left in processing after one lease: each must
// be claimable.
func (s *State) probe(cfg *Config, j *judge) {
	stuck := false
	for g := range cfg.Groups {
		for ev := range cfg.Events {
			stuck = stuck || s.recs[g][ev].state == recProcessing
		}
	}
	if !stuck {
		return
	}
	s.now += cfg.LeaseMs
	for g := range cfg.Groups {
		for ev := range cfg.Events {
			if s.recs[g][ev].state != recProcessing {
				continue
			}
			if out, _, _ := s.claim(cfg, g, ev); out != repClaimAcquired {
				j.breach(LawNotStuck)
			}
			j.storeWritten(s, cfg)
		}
	}
}

func (s *State) judgeNothingLost(cfg *Config, j *judge) {
	var produced [MaxEvents]bool
	for _, m := range s.msgs {
		produced[m.event] = true
	}
	var dead [MaxGroups][MaxEvents]bool
	for _, d := range s.dlq {
		dead[d.group][s.msgs[d.offset].event] = true
	}
	for g := range cfg.Groups {
		for ev, e := range cfg.Events {
			if !produced[ev] {
				continue
			}
			got, want := int(s.ledger[g][ev]), 1
			if e.Poison {
				want = 0
			}
			ok := (got == want && (want > 0 || dead[g][ev])) || (got == 0 && dead[g][ev])
			if !ok {
				j.breach(LawCreditedOrDLQ)
			}
		}
	}
	for i := range s.ents {
		if st := s.ents[i].status; st == stPending || st == stInflight {
			j.breach(LawNotStuck)
		}
	}
}

func (s *State) judgeProducerGate(cfg *Config, j *judge) {
	var produced [MaxEvents]int
	for _, m := range s.msgs {
		if m.origin == originProduced {
			produced[m.event]++
		}
	}
	for ev := range cfg.Events {
		if produced[ev] > 1 {
			j.breach(LawNotReenqueued)
		}
	}
	for i, d := range s.dlq {
		for _, o := range s.dlq[:i] {
			if o.group == d.group && o.offset == d.offset {
				j.breach(LawDLQOnce)
			}
		}
	}
}

// --- the history ---

// History converts s, as it stands, into the history the shared laws
// judge (package internal/history), with quiesced as the drain's answer.
// The state keeps no delivery list: each message the consumer gave up on
// in a group (a nack or dead-letter with no fault of the harness) stands
// as one delivery that gave up, which is all the shared laws read of the
// deliveries; a DLQ entry's last error, kept as a code, is left out, as no
// shared law reads it.
func (s *State) History(cfg *Config, quiesced bool) *history.History {
	sc := cfg.Sc
	h := &history.History{Source: history.Reference, Groups: sc.Config.Consumers, MaxAttempts: cfg.MaxAttempts,
		Quiesced: quiesced, Credits: map[law.GroupKey]int{}}
	var produced [MaxEvents]bool
	for off, m := range s.msgs {
		produced[m.event] = true
		e := sc.Events[m.event]
		h.Produces = append(h.Produces, history.Produce{Tenant: e.Tenant, Topic: sc.Config.Topic, Key: e.ID, Offset: int64(off), Origin: historyOrigins[m.origin]})
		for g, group := range sc.Config.Consumers {
			if s.ent(cfg, int32(off), g).gaveUp {
				h.Deliveries = append(h.Deliveries, history.Delivery{Group: group, Event: e.ID, Offset: int64(off), GaveUp: true,
					Account: line(fmt.Sprintf("%s/%d %s: given up by the consumer", group, off, e.ID))})
			}
		}
	}
	for ev, e := range sc.Events {
		h.Events = append(h.Events, history.Event{ID: e.ID, Poison: cfg.Events[ev].Poison, Produced: produced[ev]})
		for g, group := range sc.Config.Consumers {
			if n := s.ledger[g][ev]; n > 0 {
				h.Credits[law.GroupKey{Group: group, Key: e.ID}] = int(n)
			}
		}
	}
	for _, d := range s.dlq {
		e := sc.Events[s.msgs[d.offset].event]
		h.DLQ = append(h.DLQ, broker.DLQEntry{Topic: sc.Config.Topic, Offset: int64(d.offset), Group: sc.Config.Consumers[d.group],
			Attempts: int(d.attempts), Tenant: e.Tenant, Key: e.ID, Poison: d.poison})
	}
	h.DLQQuiet = h.DLQ
	return h
}

// historyOrigins are the broker's names of the messages' origins.
var historyOrigins = [...]broker.Origin{originProduced: broker.Produced, originDuplicated: broker.Duplicated, originReplayed: broker.Replayed}

// line is a line of a history's delivery.
type line string

func (m line) String() string { return string(m) }

// lawByID is each law's constant, by its ID in the registry.
var lawByID = func() map[string]Law {
	out := map[string]Law{}
	for l := LawNone + 1; l < numLaws; l++ {
		out[Laws[l][1]] = l
	}
	return out
}()

// LawOf returns the law whose registry ID is id (LawNone for none the
// compact judge checks).
func LawOf(id string) Law { return lawByID[id] }
