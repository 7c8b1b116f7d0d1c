// Package compact is the reference consumption system restated as a small
// value-typed state machine, for the explorer: the in-memory store
// (impl/reference/memstore), broker (membroker), producer gate (producer),
// the reference consumer pipeline (consumer.Reference) and the runner's
// world around them (faults/runner: the handler's fates, the drain, the
// replay and the probe), each step by the same rules, over fixed arrays
// instead of maps and pointers. A state is copied by assignment and
// fingerprinted from its own bytes, which is what lets the explorer visit
// a hundred thousand states a second where copying the runner's recorded
// world allows a few thousand.
//
// The compact model is the executable specification of the reference
// world: the package's tests play the same schedules on it and on the
// reference runner and hold the runner to it, comparing the whole state
// after every step (records, ledger, messages, DLQ, gate, workers), and
// explore's tests compare the distinct states of every depth found by both
// engines. The laws (judge.go) are the explorer's fast path, judged
// incrementally over the packed state: the laws with one judge function
// over a history (package internal/history) stay restated here because
// converting each finished state into a history and judging it there made
// the explorer about half as fast (BenchmarkExplore/compact, 256k against
// 123k states per CPU-second), and TestTheFastPathAgreesWithTheSharedJudge
// holds the restatement equal to those functions on states drawn
// schedules reach and on states broken the way those laws see. The other
// laws and the coverage situations (coverage.go) restate the properties'
// monitors and the coverage tracker; a violation the compact engine finds
// is judged again by the real properties on the real reference before it
// is reported.
//
// The monitors' memory kept in the state (the deliveries and poison
// attempts bounded-attempts counts, the delivery times, faults, settled
// holders and give-ups of nothing-lost/healthy-applied) is packed but not
// fingerprinted, as the runner engine's fingerprint leaves out the
// properties' monitors: two states that differ only there are one state
// to the search.
package compact

import (
	"fmt"

	"github.com/idemcheck/idemcheck/faults/scenario"
	"github.com/idemcheck/idemcheck/impl/contract/broker"
)

// The largest world the compact state holds; a bigger one is explored on
// the runner.
const (
	MaxEvents  = 6
	MaxGroups  = 3
	MaxWorkers = 6
	MaxNodes   = 4
)

// StartMs is the true time every run starts at (runner.StartMs).
const StartMs int64 = 1_700_000_000_000

// DrainLimit bounds the drain's actions (runner.DrainLimit).
const DrainLimit = 4000

// Config is the world of a consumption scenario, by index.
type Config struct {
	Events  []Event
	Groups  int
	Workers []Worker
	Nodes   int
	broker.Policy
	LeaseMs     int64
	RetentionMs int64
	// Sc is the scenario the config was read from.
	Sc *scenario.Consumption
}

// Event is an event's fate.
type Event struct {
	Poison    bool
	Transient int // the first Transient handler runs fail
}

// Worker is a worker's group and node.
type Worker struct {
	Group, Node int
}

// NewConfig reads sc's world; it fails for a world larger than the compact
// state holds, or one the reference does not run as a compact world
// (initial skews, several tenants).
func NewConfig(sc *scenario.Consumption) (*Config, error) {
	c := sc.Config
	cfg := &Config{Groups: len(c.Consumers), Nodes: len(c.Nodes), Policy: c.Policy,
		LeaseMs: c.LeaseMs, RetentionMs: c.RetentionMs, Sc: sc}
	switch {
	case len(sc.Events) > MaxEvents || cfg.Groups > MaxGroups || len(c.Workers) > MaxWorkers || cfg.Nodes > MaxNodes:
		return nil, fmt.Errorf("compact: world of %d events, %d groups, %d workers, %d nodes exceeds %d, %d, %d, %d",
			len(sc.Events), cfg.Groups, len(c.Workers), cfg.Nodes, MaxEvents, MaxGroups, MaxWorkers, MaxNodes)
	case cfg.MaxAttempts < 1 || cfg.MaxAttempts > 15:
		return nil, fmt.Errorf("compact: max_attempts %d outside 1..15", cfg.MaxAttempts)
	}
	tenant := ""
	for i, e := range sc.Events {
		if i == 0 {
			tenant = e.Tenant
		} else if e.Tenant != tenant {
			return nil, fmt.Errorf("compact: events of several tenants")
		}
		cfg.Events = append(cfg.Events, Event{Poison: e.Fate == scenario.FatePoison, Transient: transient(e)})
	}
	nodeIdx := map[string]int{}
	for i, n := range c.Nodes {
		if n.SkewMs != 0 {
			return nil, fmt.Errorf("compact: node %s starts skewed", n.Name)
		}
		nodeIdx[n.Name] = i
	}
	groupIdx := map[string]int{}
	for i, g := range c.Consumers {
		groupIdx[g] = i
	}
	for _, w := range c.Workers {
		g, ok := groupIdx[w.Consumer]
		n, ok2 := nodeIdx[w.Node]
		if !ok || !ok2 {
			return nil, fmt.Errorf("compact: worker %s: unknown group or node", w.Name)
		}
		cfg.Workers = append(cfg.Workers, Worker{Group: g, Node: n})
	}
	return cfg, nil
}

func transient(e scenario.Event) int {
	if e.Fate == scenario.FateTransient {
		return e.Transient
	}
	return 0
}

// backoff is broker.Policy.Backoff.
func (c *Config) backoff(attempts int) int64 {
	d := c.BackoffMs
	for i := 1; i < attempts && d < c.MaxBackoffMs; i++ {
		d *= 2
	}
	return min(d, c.MaxBackoffMs)
}

// Record states (store.State), gate states and message statuses, as small
// codes.
const (
	recNone uint8 = iota
	recProcessing
	recProcessed
	recFailed
)

const (
	gateNone uint8 = iota
	gatePending
	gateCommitted
	gateFailed
)

const (
	stPending uint8 = iota
	stInflight
	stAcked
	stDead
)

// Message origins (broker.Origin).
const (
	originProduced uint8 = iota
	originDuplicated
	originReplayed
)

// Reasons: last errors of messages, records and DLQ entries.
const (
	reasonNone      uint8 = iota
	reasonAckTimout       // "ack_timeout"
	reasonLocked          // "locked"
	reasonTransient       // "transient: downstream timeout"
	reasonPoison          // "poison: amount rejected"
)

// Worker stages: the reference pipeline's next step.
const (
	stageIdle uint8 = iota
	stageClaim
	stageHandle
	stageCommit
	stageFail
	stageNack
	stageDeadLetter
	stageAck
)

// Handler result kinds.
const (
	resNone uint8 = iota
	resOK
	resTransient
	resPoison
)

// Steps' reports, folded into a worker's path (the consumer's trail).
const (
	repClaimAcquired uint32 = iota + 1
	repClaimProcessed
	repClaimLocked
	repHandleOK
	repHandleTransient
	repHandlePoison
	repCommit
	repCommitStale
	repFail
	repFailStale
	repNack
	repDeadLetter
	repAck
)

// record is a claim record (store.Record) of one key.
type record struct {
	state    uint8
	attempts uint8
	lastErr  uint8
	// settled is the healthy-applied law's memory: the claim's holder
	// settled its delivery (ack, nack, dead-letter).
	settled  bool
	token    uint32
	started  int64
	finished int64
	lease    int64
}

// message is one offset of the topic; entry is its state in one group.
type message struct {
	event  int8
	origin uint8
}

type entry struct {
	status   uint8
	attempts uint8
	lastErr  uint8
	// deliveries and poisoned are the bounded-attempts monitor's memory:
	// the deliveries counted, and the attempts whose handler run returned
	// poison (a bit each).
	deliveries uint8
	poisoned   uint16
	// gaveUp is the healthy-applied law's memory: a delivery of this
	// message was nacked or dead-lettered with no fault of the harness.
	gaveUp       bool
	lastDelivery int32
	eligible     int64
	delivered    int64
}

// dlqEntry is a DLQ entry (broker.DLQEntry), in arrival order.
type dlqEntry struct {
	group    int8
	poison   bool
	attempts uint8
	lastErr  uint8
	offset   int32
}

// worker is a worker's delivery in hand and its place in the pipeline,
// with the coverage tracker's memory of it.
type worker struct {
	stage    uint8 // stageIdle: no delivery
	result   uint8
	reason   uint8
	attempts uint8 // the delivery's attempts
	event    int8
	lastErr  uint8 // the message's last error at delivery (coverage)
	origin   uint8
	offset   int32
	id       int32 // delivery id
	token    uint32
	path     uint32 // the reports of its steps since the delivery, 4 bits each
	// The coverage tracker's memory: the last step (a report), and the
	// claim held (at holdAt) with what happened to it since.
	last                         uint32
	hold, taken, cleaned, reclam bool
	holdAt                       int64
	// The healthy-applied law's memory: when the delivery came, and
	// whether the harness caused a fault in it (the event's fate failing
	// the handler, the lease lost to a takeover, a claim locked by an
	// unsettled delivery).
	at      int64
	faulted bool
}

// State is the whole state of a compact world. The messages, their
// per-group entries and the DLQ live in slices: copy a state with
// CopyFrom, or keep it packed (Pack).
type State struct {
	now       int64
	lastToken uint32
	nextID    int32
	gate      [MaxEvents]uint8
	runs      [MaxGroups][MaxEvents]uint8
	recs      [MaxGroups][MaxEvents]record
	ledger    [MaxGroups][MaxEvents]uint8
	skew      [MaxNodes]int64
	workers   [MaxWorkers]worker
	// The monitors' memory: keys whose record retention removed in time,
	// and the newest token issued per key.
	legit  [MaxGroups][MaxEvents]bool
	latest [MaxGroups][MaxEvents]uint32
	// msgs holds the topic's offsets; ents their state per group (offset *
	// groups + group).
	msgs []message
	ents []entry
	dlq  []dlqEntry
	// cov is the coverage situations reached (coverage.Set).
	cov uint64
}

// New returns the initial state of cfg's world: true time StartMs,
// nothing produced, every worker idle.
func New(*Config) *State { return &State{now: StartMs} }

func (s *State) ent(cfg *Config, off int32, g int) *entry { return &s.ents[int(off)*cfg.Groups+g] }

// --- the producer, its gate and the broker ---

func (s *State) enqueue(cfg *Config, ev int8, origin uint8) int32 {
	off := int32(len(s.msgs))
	s.msgs = append(s.msgs, message{event: ev, origin: origin})
	for range cfg.Groups {
		s.ents = append(s.ents, entry{status: stPending, eligible: s.now})
	}
	return off
}

func (s *State) produce(cfg *Config, i int) {
	switch s.gate[i] {
	case gateCommitted, gatePending:
		return
	}
	s.enqueue(cfg, int8(i), originProduced)
	s.gate[i] = gateCommitted
}

func (s *State) produceFail(i int) {
	switch s.gate[i] {
	case gateCommitted, gatePending:
		return
	}
	s.gate[i] = gateFailed
}

// duplicate enqueues n copies of event i's first produced message; it
// reports whether there was one.
func (s *State) duplicate(cfg *Config, i, n int) bool {
	for _, m := range s.msgs {
		if int(m.event) == i && m.origin == originProduced {
			for range n {
				s.enqueue(cfg, m.event, originDuplicated)
			}
			return true
		}
	}
	return false
}

// replay enqueues again every message not itself replayed.
func (s *State) replay(cfg *Config) {
	n := len(s.msgs)
	for off := 0; off < n; off++ {
		if m := s.msgs[off]; m.origin != originReplayed {
			s.enqueue(cfg, m.event, originReplayed)
		}
	}
}

// tick takes back every inflight message whose ack timeout passed.
//
// The drain ticks before every delivery, so tick and deliver walk a
// group's entries directly (stride Groups in ents) rather than through
// ent's multiplication and bounds check per offset: they are most of the
// explorer's time.
func (s *State) tick(cfg *Config, j *judge) {
	ng := cfg.Groups
	for g := range ng { // group by group, as membroker's Tick: the DLQ's order
		for i := g; i < len(s.ents); i += ng {
			e := &s.ents[i]
			if e.status == stInflight && s.now >= e.delivered+cfg.AckTimeoutMs {
				e.lastErr = reasonAckTimout
				s.retryOrDead(cfg, j, int32(i/ng), g, 0)
			}
		}
	}
}

func (s *State) retryOrDead(cfg *Config, j *judge, off int32, g int, delay int64) {
	e := s.ent(cfg, off, g)
	if int(e.attempts) >= cfg.MaxAttempts {
		e.status = stDead
		s.addDLQ(cfg, j, dlqEntry{group: int8(g), offset: off, attempts: e.attempts, lastErr: e.lastErr})
		return
	}
	e.status = stPending
	e.eligible = s.now + delay
}

func (s *State) addDLQ(cfg *Config, j *judge, d dlqEntry) {
	for _, o := range s.dlq {
		if o.group == d.group && o.offset == d.offset {
			return
		}
	}
	s.dlq = append(s.dlq, d)
	j.dlqEntry(s, cfg, d)
}

// deliver hands the pick-th eligible message of worker wi's group to it;
// it reports whether anything was delivered. The broker ticks first.
func (s *State) deliver(cfg *Config, j *judge, wi, pick int) bool {
	if s.workers[wi].stage != stageIdle {
		return false
	}
	s.tick(cfg, j)
	return s.deliverTicked(cfg, j, wi, pick)
}

// deliverTicked is deliver once the broker has ticked.
func (s *State) deliverTicked(cfg *Config, j *judge, wi, pick int) bool {
	return s.deliverFrom(cfg, j, wi, pick, cfg.Workers[wi].Group)
}

// deliverFrom is deliverTicked given that the entries of the worker's
// group before ents[from] are settled (acked or dead).
func (s *State) deliverFrom(cfg *Config, j *judge, wi, pick, from int) bool {
	w := &s.workers[wi]
	ng := cfg.Groups
	// The pick-th eligible message, counted modulo the eligible ones; the
	// drain always picks the first, which needs no count: when none is
	// eligible the walk below finds none either.
	if pick > 0 {
		n := 0
		for i := from; i < len(s.ents); i += ng {
			if e := &s.ents[i]; e.status == stPending && e.eligible <= s.now {
				n++
			}
		}
		if n == 0 {
			return false
		}
		pick %= n
	}
	for i := from; i < len(s.ents); i += ng {
		e := &s.ents[i]
		if e.status != stPending || e.eligible > s.now {
			continue
		}
		if pick > 0 {
			pick--
			continue
		}
		off := i / ng
		e.attempts++
		e.status = stInflight
		e.delivered = s.now
		s.nextID++
		e.lastDelivery = s.nextID
		m := s.msgs[off]
		*w = worker{stage: stageClaim, event: m.event, offset: int32(off), id: s.nextID, attempts: e.attempts, lastErr: e.lastErr, origin: m.origin, at: s.now}
		j.delivered(s, cfg, wi, e)
		return true
	}
	return false
}

// nack records the reason and retries or dead-letters the message of a
// delivery that is still its last one.
func (s *State) nack(cfg *Config, j *judge, g int, w *worker) {
	e := s.ent(cfg, w.offset, g)
	if e.lastDelivery != w.id || e.status != stInflight {
		return
	}
	e.lastErr = w.reason
	s.retryOrDead(cfg, j, w.offset, g, cfg.backoff(int(e.attempts)))
}

func (s *State) ack(cfg *Config, g int, w *worker) {
	e := s.ent(cfg, w.offset, g)
	if e.status == stAcked || e.status == stDead {
		return
	}
	e.status = stAcked
}

// quiet reports whether nothing is pending or in flight, and otherwise the
// earliest time something becomes deliverable.
func (s *State) quiet(cfg *Config) (bool, int64) {
	next := int64(-1)
	for i := range s.ents {
		e := &s.ents[i]
		var t int64
		switch e.status {
		case stPending:
			t = e.eligible
		case stInflight:
			t = e.delivered + cfg.AckTimeoutMs
		default:
			continue
		}
		if next < 0 || t < next {
			next = t
		}
	}
	return next < 0, next
}

// --- the store ---

// claim is memstore's Claim under the reference conventions.
func (s *State) claim(cfg *Config, g, ev int) (outcome uint32, token uint32, takeover bool) {
	r := &s.recs[g][ev]
	switch {
	case r.state == recProcessed:
		return repClaimProcessed, 0, false
	case r.state == recProcessing && s.now < r.lease:
		return repClaimLocked, 0, false
	}
	takeover = r.state == recProcessing
	r.state = recProcessing
	r.started = s.now
	r.finished = 0
	r.attempts++
	r.settled = false
	s.lastToken++
	r.token = s.lastToken
	r.lease = s.now + cfg.LeaseMs
	s.latest[g][ev] = max(s.latest[g][ev], r.token)
	return repClaimAcquired, r.token, takeover
}

// held is the fencing check: the record is in processing under token.
func (s *State) held(g, ev int, token uint32) bool {
	r := &s.recs[g][ev]
	return r.state == recProcessing && r.token == token
}

// cleanup removes processed records finished at or before now-retention,
// by the store's clock (true time); it returns them as a bit per key
// (group*MaxEvents+event).
func (s *State) cleanup(cfg *Config) uint64 {
	var removed uint64
	cutoff := s.now - cfg.RetentionMs
	for g := range cfg.Groups {
		for ev := range cfg.Events {
			if r := &s.recs[g][ev]; r.state == recProcessed && r.finished <= cutoff {
				removed |= 1 << (g*MaxEvents + ev)
			}
		}
	}
	return removed
}

// --- the world's steps ---

// Apply plays one schedule step, judged by j.
func (s *State) Apply(cfg *Config, j *judge, st Step) {
	switch st.Op {
	case opProduce:
		s.produce(cfg, st.Event)
	case opProduceFail:
		s.produceFail(st.Event)
	case opDuplicate:
		if s.duplicate(cfg, st.Event, st.N) {
			j.cov(s, situationDuplicate)
		}
	case opDeliver:
		s.deliver(cfg, j, st.Worker, st.N)
	case opStep:
		s.step(cfg, j, st.Worker)
	case opCrash:
		s.crash(j, st.Worker)
	case opAdvance:
		s.advance(cfg, j, st.Ms)
	case opSkew:
		s.skew[st.Node] = st.Ms
	case opClockStep:
		s.skew[st.Node] += st.Ms
	case opCleanup:
		s.doCleanup(cfg, j)
	case opReplay:
		s.replay(cfg)
	}
}

func (s *State) advance(cfg *Config, j *judge, ms int64) {
	if ms > 0 {
		s.now += ms
	}
	s.tick(cfg, j)
}

func (s *State) doCleanup(cfg *Config, j *judge) {
	removed := s.cleanup(cfg)
	if removed == 0 {
		return
	}
	for g := range cfg.Groups {
		for ev := range cfg.Events {
			if removed&(1<<(g*MaxEvents+ev)) == 0 {
				continue
			}
			j.removing(s, cfg, g, ev)
			s.recs[g][ev] = record{}
		}
	}
	j.cleaned(s, cfg, removed)
	j.storeWritten(s, cfg)
}

func (s *State) crash(j *judge, wi int) {
	w := &s.workers[wi]
	j.crashed(s, w)
	*w = worker{}
}

// step advances worker wi by one pipeline step (the reference pipeline's
// stages, consumer.Reference).
func (s *State) step(cfg *Config, j *judge, wi int) {
	w := &s.workers[wi]
	if w.stage == stageIdle {
		return
	}
	g, ev := cfg.Workers[wi].Group, int(w.event)
	var rep uint32
	next := stageIdle
	switch w.stage {
	case stageClaim:
		j.claiming(s, cfg, wi)
		out, tok, _ := s.claim(cfg, g, ev)
		rep = out
		switch out {
		case repClaimAcquired:
			w.token = tok
			j.acquired(s, cfg, wi)
			next = stageHandle
		case repClaimProcessed:
			next = stageAck
		default:
			w.result, w.reason = resTransient, reasonLocked
			next = stageNack
			j.locked(s, cfg, wi)
		}
		j.storeWritten(s, cfg)
	case stageHandle:
		k := &s.runs[g][ev]
		if *k < 255 {
			*k++
		}
		e := cfg.Events[ev]
		switch {
		case e.Poison:
			w.result, w.reason, rep, next = resPoison, reasonPoison, repHandlePoison, stageFail
			j.poisoned(s, cfg, wi)
		case int(*k) <= e.Transient:
			w.result, w.reason, rep, next = resTransient, reasonTransient, repHandleTransient, stageFail
			w.faulted = true
		default:
			w.result, rep, next = resOK, repHandleOK, stageCommit
		}
	case stageCommit:
		if !s.held(g, ev, w.token) {
			rep, next = repCommitStale, stageIdle
			w.faulted = true
			j.staleCommit(s, cfg, wi)
			break
		}
		j.committing(s, cfg, wi)
		if s.ledger[g][ev] == 0 {
			s.ledger[g][ev] = 1
		}
		r := &s.recs[g][ev]
		r.state, r.finished, r.lease, r.lastErr = recProcessed, s.now, 0, reasonNone
		rep, next = repCommit, stageAck
		j.committed(s, cfg, wi)
		j.storeWritten(s, cfg)
	case stageFail:
		if !s.held(g, ev, w.token) {
			rep, next = repFailStale, stageIdle
			w.faulted = true
			j.staleFail(s, cfg, wi)
			break
		}
		j.failing(s, cfg, wi)
		r := &s.recs[g][ev]
		r.state, r.lastErr, r.lease = recFailed, w.reason, 0
		rep = repFail
		if w.result == resPoison {
			next = stageDeadLetter
		} else {
			next = stageNack
		}
		j.released(s, w)
		j.storeWritten(s, cfg)
	case stageNack:
		j.nacking(s, cfg, wi)
		j.settling(s, cfg, wi, true)
		s.nack(cfg, j, g, w)
		rep, next = repNack, stageIdle
	case stageDeadLetter:
		j.settling(s, cfg, wi, true)
		s.addDLQ(cfg, j, dlqEntry{group: int8(g), offset: w.offset, attempts: w.attempts, lastErr: w.reason, poison: true})
		if w.result == resPoison {
			j.cov(s, situationPoisonToDLQ)
		}
		rep, next = repDeadLetter, stageAck
	case stageAck:
		j.settling(s, cfg, wi, false)
		s.ack(cfg, g, w)
		rep, next = repAck, stageIdle
	}
	w.path = w.path<<4 | rep
	w.last = rep
	w.stage = next
	if next == stageIdle {
		*w = worker{}
	}
}

// Drain drives the world to quiescence as the runner's drain does: busy
// workers finish, idle ones take what is eligible (pick 0), and time jumps
// to the next redelivery. It reports false if DrainLimit actions did not
// suffice.
//
// Each delivery ticks the broker first, as deliver does; but within a
// drain a tick can only take something back once time has moved (with a
// positive ack timeout, a delivery made now is not due now, and a
// pipeline step makes nothing inflight), and time moves only by the
// drain's own advance, which ticks. So once the drain has ticked at the
// present time, the ticks of its later deliveries are no-ops and are
// skipped; with them, a group found with nothing eligible stays so for
// the rest of the round (a delivery makes nothing pending), so its other
// workers need not look.
func (s *State) Drain(cfg *Config, j *judge) bool {
	ticked := false // a tick at s.now has taken back everything due
	// A message acked or dead in a group stays so (nothing but a tick, a
	// nack or a delivery changes an entry's status, and only that of one
	// pending or in flight), and messages are only appended: each group's
	// deliveries start past the prefix of its entries so settled.
	var from [MaxGroups]int
	for g := range cfg.Groups {
		from[g] = g
	}
	for n := 0; n < DrainLimit; {
		progressed := false
		for wi := range cfg.Workers {
			for s.workers[wi].stage != stageIdle && n < DrainLimit {
				s.step(cfg, j, wi)
				n++
				progressed = true
			}
		}
		var empty uint64 // groups with nothing eligible this round (a bit each)
		for wi := range cfg.Workers {
			if s.workers[wi].stage != stageIdle {
				continue
			}
			g := cfg.Workers[wi].Group
			if ticked && empty&(1<<g) != 0 {
				continue
			}
			if !ticked {
				s.tick(cfg, j)
				ticked = cfg.AckTimeoutMs > 0
			}
			for from[g] < len(s.ents) && settled(s.ents[from[g]].status) {
				from[g] += cfg.Groups
			}
			if s.deliverFrom(cfg, j, wi, 0, from[g]) {
				n++
				progressed = true
			} else {
				empty |= 1 << g
			}
		}
		if progressed {
			continue
		}
		quiet, next := s.quiet(cfg)
		if quiet {
			return true
		}
		if wait := next - s.now; wait > 0 {
			s.advance(cfg, j, wait)
		} else {
			s.tick(cfg, j)
		}
		ticked = cfg.AckTimeoutMs > 0
		n++
	}
	return false
}

// settled reports whether an entry of status st is done with: acked or
// dead.
func settled(st uint8) bool { return st == stAcked || st == stDead }

// Busy reports the event whose delivery worker wi holds (-1: idle).
func (s *State) Busy(wi int) int {
	if s.workers[wi].stage == stageIdle {
		return -1
	}
	return int(s.workers[wi].event)
}

// CopyFrom makes s a copy of src, reusing s's slices: a scratch state
// costs no allocation.
func (s *State) CopyFrom(src *State) {
	msgs, ents, dlq := s.msgs[:0], s.ents[:0], s.dlq[:0]
	*s = *src
	s.msgs = append(msgs, src.msgs...)
	s.ents = append(ents, src.ents...)
	s.dlq = append(dlq, src.dlq...)
}
