package coverage

import (
	"github.com/idemcheck/idemcheck/faults/runner"
	"github.com/idemcheck/idemcheck/faults/scenario"
	"github.com/idemcheck/idemcheck/impl/contract/broker"
	"github.com/idemcheck/idemcheck/impl/contract/store"
	"github.com/idemcheck/idemcheck/impl/reference/consumer"
)

// ackTimeout is the last error a broker gives a message it takes back after
// its ack timeout (impl/reference/membroker); any other last error is a
// nack's reason.
const ackTimeout = "ack_timeout"

// Tracker follows one run and records the situations it reaches. It is a
// runner.Observer: pass it to runner.Run or runner.NewWorld, then call
// Finish with the outcome (projection situations are read from it).
//
// An explorer that forks a world at each state forks its Tracker with it
// (Clone) and adds the set of every schedule it completes to its Counts
// (Counts.AddRun(kind, tracker.Reached())); a driver that plays whole
// scenarios one after another uses Observer instead.
type Tracker struct {
	set     Set
	kind    scenario.Kind
	workers map[string]*workerState
}

// workerState is what the tracker knows of one worker's delivery in hand.
type workerState struct {
	origin broker.Origin
	// last is the worker's last pipeline step on this delivery ("" right
	// after the delivery): where a crash strikes.
	last runner.ActionKind
	hold *hold
}

// hold is a claim a worker won and has not settled.
type hold struct {
	key   store.Key
	atMs  int64
	taken bool // another worker took the key over after the lease expired
	// cleaned: a cleanup removed the key's record while this was held;
	// reclaimed: after that, another worker claimed the key again.
	cleaned, reclaimed bool
}

// NewTracker returns a tracker for one run.
func NewTracker() *Tracker { return &Tracker{workers: map[string]*workerState{}} }

// Clone returns an independent copy of t, for an explorer that forks the
// run t follows.
func (t *Tracker) Clone() *Tracker {
	c := &Tracker{set: t.set, kind: t.kind, workers: make(map[string]*workerState, len(t.workers))}
	for name, ws := range t.workers {
		cp := *ws
		if ws.hold != nil {
			h := *ws.hold
			cp.hold = &h
		}
		c.workers[name] = &cp
	}
	return c
}

// Reached is the set of situations reached so far.
func (t *Tracker) Reached() Set { return t.set }

// Kind is the kind of the run followed ("" before its first action).
func (t *Tracker) Kind() scenario.Kind { return t.kind }

// Finish adds what only the outcome shows: the projection situations.
func (t *Tracker) Finish(out *runner.Outcome) {
	if out == nil {
		return
	}
	switch {
	case out.Projection != nil:
		t.kind = scenario.KindProjection
		for _, r := range out.Projection.Readings {
			if r.WallChangeMs < 0 {
				t.set = t.set.With(HLCClockStepBack)
			}
			if r.Stamps() > 1<<16 {
				t.set = t.set.With(HLCCounterPast16Bits)
			}
		}
	case out.Consumption != nil:
		t.kind = scenario.KindConsumption
	}
}

// BeforeStep implements runner.Observer; the tracker needs nothing then.
func (t *Tracker) BeforeStep(*runner.View, string) {}

// After implements runner.Observer.
func (t *Tracker) After(v *runner.View, a *runner.Action) {
	t.kind = scenario.KindConsumption
	switch a.Kind {
	case runner.ActDeliver:
		t.deliver(v, a)
	case runner.ActDuplicate:
		if len(a.Offsets) > 0 {
			t.set = t.set.With(Duplicate2To10)
		}
	case runner.ActCrash:
		t.crash(a)
	case runner.ActCleanup:
		t.cleanup(v, a)
	}
	if !a.Kind.IsWorkerStep() {
		return
	}
	ws := t.workers[a.Worker]
	if ws == nil {
		ws = &workerState{}
		t.workers[a.Worker] = ws
	}
	switch a.Kind {
	case runner.ActClaim:
		t.claim(v, a, ws)
	case runner.ActCommit, runner.ActEffect, runner.ActMark:
		t.commit(v, a, ws)
	case runner.ActFail:
		if ws.hold != nil && ws.hold.taken {
			t.set = t.set.With(TakeoverThenStaleRelease)
		}
		ws.hold = nil
	case runner.ActDeadLetter:
		if a.Handler != nil && a.Handler.Kind == consumer.Poison {
			t.set = t.set.With(PoisonToDLQ)
		}
	}
	ws.last = a.Kind
	if _, busy := v.Busy(a.Worker); !busy {
		delete(t.workers, a.Worker) // the delivery is settled or dropped
	}
}

func (t *Tracker) deliver(v *runner.View, a *runner.Action) {
	if ws := t.workers[a.Worker]; ws != nil {
		*ws = workerState{origin: a.Origin} // a new delivery: what was known of the last is void
	} else {
		t.workers[a.Worker] = &workerState{origin: a.Origin}
	}
	if a.Attempts >= 2 {
		switch a.LastError {
		case "":
		case ackTimeout:
			t.set = t.set.With(RedeliveryAfterAckTimeout)
		default:
			t.set = t.set.With(RedeliveryAfterNack)
		}
	}
	if a.Attempts >= v.Config().MaxAttempts {
		t.set = t.set.With(MaxAttemptsReached)
	}
}

func (t *Tracker) claim(v *runner.View, a *runner.Action, ws *workerState) {
	for _, w := range v.Config().Workers {
		if w.Name == a.Worker {
			continue
		}
		if k, busy := v.Busy(w.Name); busy && k == a.Key {
			t.set = t.set.With(ConcurrentClaims)
			break
		}
	}
	if a.Claim == nil || a.Claim.Outcome != store.Acquired {
		return
	}
	for name, other := range t.workers {
		h := other.hold
		if name == a.Worker || h == nil || h.key != a.Key {
			continue
		}
		// The holder's claim has ended: its lease ran out, or, where
		// the store declares so, its record's own expiry came first.
		if a.AtMs-h.atMs >= v.Conventions().HoldMs(v.Config().LeaseMs) {
			h.taken = true
			t.set = t.set.With(TakeoverAfterLeaseExpiry)
		}
		if h.cleaned {
			h.reclaimed = true
		}
	}
	ws.hold = &hold{key: a.Key, atMs: a.AtMs}
}

func (t *Tracker) commit(v *runner.View, a *runner.Action, ws *workerState) {
	if a.Stale {
		t.set = t.set.With(StaleCommitRefused)
	}
	if a.Kind != runner.ActMark && ws.hold != nil && ws.hold.reclaimed {
		t.set = t.set.With(CleanupReclaimStaleCommit)
	}
	if a.Kind == runner.ActEffect {
		return // the mark, next, completes the commit
	}
	ws.hold = nil
	if a.Stale || a.Err != "" || ws.origin != broker.Replayed {
		return
	}
	for _, d := range v.DLQ() {
		if d.Group == a.Key.Consumer && d.Key == a.Key.ID && d.Tenant == a.Key.Tenant {
			t.set = t.set.With(ReplayRecoversDLQ)
			return
		}
	}
}

// crash names the pipeline point a busy worker crashed at by its last step.
func (t *Tracker) crash(a *runner.Action) {
	ws := t.workers[a.Worker]
	delete(t.workers, a.Worker)
	if !a.Busy || ws == nil {
		return
	}
	switch ws.last {
	case "":
		t.set = t.set.With(CrashBeforeClaim)
	case runner.ActClaim:
		if ws.hold != nil {
			t.set = t.set.With(CrashAfterClaim)
		}
	case runner.ActHandle:
		t.set = t.set.With(CrashAfterHandle)
	case runner.ActCommit, runner.ActMark:
		t.set = t.set.With(CrashAfterCommit)
	case runner.ActFail:
		t.set = t.set.With(CrashAfterFail)
	case runner.ActDeadLetter:
		t.set = t.set.With(CrashAfterDeadLetter)
	}
}

func (t *Tracker) cleanup(v *runner.View, a *runner.Action) {
	if len(a.Removed) == 0 {
		return
	}
	removed := make(map[store.Key]bool, len(a.Removed))
	for _, r := range a.Removed {
		removed[r.Key] = true
	}
	for _, ws := range t.workers {
		if ws.hold != nil && removed[ws.hold.key] {
			ws.hold.cleaned = true
		}
	}
	if t.set.Has(CleanupWhileRedeliveryPending) {
		return
	}
	for _, m := range v.Messages() {
		if m.Status != broker.Pending && m.Status != broker.Inflight {
			continue
		}
		k := store.Key{Tenant: m.Message.Tenant, Consumer: m.Message.Group, ID: m.Message.Key}
		if removed[k] {
			t.set = t.set.With(CleanupWhileRedeliveryPending)
			return
		}
	}
}

// reset forgets the run, for the next one.
func (t *Tracker) reset() {
	t.set, t.kind = 0, ""
	clear(t.workers)
}
