package consumerharness

import (
	"bytes"
	"context"
	"database/sql/driver"
	"fmt"
	"slices"
	"strings"

	"github.com/idemcheck/idemcheck/impl/contract/broker"
	"github.com/idemcheck/idemcheck/internal/consumerharness/sqlhook"
	"github.com/idemcheck/idemcheck/internal/search"
	"github.com/idemcheck/idemcheck/internal/sqlscan"
)

// One run under Verify: the search decides each step as the run goes
// (choose, called by play in place of reading the scenario's steps),
// appending it to the scenario, so that the run played is an ordinary
// scenario that Replay plays again the same.

// tkind is the kind of a choice.
type tkind uint8

const (
	// kStop ends the schedule: the system is quiet.
	kStop tkind = iota
	// kTick moves time to the broker's next deadline: nothing else can
	// move. It costs no budget.
	kTick
	// kRun moves a parked worker by one call, or retries a blocked one.
	kRun
	// kRecv has an idle worker receive the message at offset arg.
	kRecv
	// kFail fails a parked worker's begin, exec or query.
	kFail
	// kCrash crashes a worker.
	kCrash
	// kDup duplicates event arg's message.
	kDup
	// kAdvance moves time: to the broker's next deadline (arg 0) or by
	// Bounds.Durations[arg-1].
	kAdvance
	// kReplay replays the stream.
	kReplay
	// kRebalance gives partition arg of a log broker to worker w.
	kRebalance
)

var kindNames = [...]string{"stop", "tick", "run", "receive", "fail", "crash", "duplicate", "advance", "replay", "rebalance"}

// tid names a choice the same way in every run that meets it.
type tid struct {
	kind tkind
	w    int8
	arg  int64
}

func (t tid) String() string { return fmt.Sprintf("%s/w%d/%d", kindNames[t.kind], t.w+1, t.arg) }

// move is the search core's name of the choice.
func (t tid) move() search.MoveID { return search.MoveID{Kind: uint8(t.kind), Worker: t.w, Arg: t.arg} }

// workerMove reports whether the choice moves a worker (and so makes it
// the worker the schedule is on).
func (t tid) workerMove() bool { return t.kind == kRun || t.kind == kRecv || t.kind == kFail }

// budget indexes the budgets a choice spends.
const (
	bPreempt = iota
	bCrash
	bFail
	bDup
	bAdvance
	bReplay
	bRebalance
	nBudgets
)

type budgets [nBudgets]int16

// covers reports whether b has at least what o has, in every budget.
func (b budgets) covers(o budgets) bool {
	for i := range b {
		if b[i] < o[i] {
			return false
		}
	}
	return true
}

// trans is one choice enabled at a decision point.
type trans struct {
	id   tid
	step Step
	fp   footprint
	// cost is the preemptions it costs here; spend the budget it spends
	// (-1: none).
	cost  int16
	spend int
	// dirty says it may change the database's committed content.
	dirty bool
	// forced marks a run that fails its call for a transient fate.
	forced bool
	// txWrites are the writes a call inside a transaction makes, and
	// ends says the call ends the transaction.
	txWrites []access
	ends     bool
	// undone says a crash of its worker right after it leaves the state a
	// crash right before it leaves (see crashUndoes).
	undone bool
}

// wview is what the search keeps of a worker across a run.
type wview struct {
	hist history
	// seen says the incarnation handled something: crashing it idle then
	// loses memory (a Worker consumer).
	seen         bool
	inc          int
	lastDelivery int64
	// pendingFail says the delivery's first begin, exec or query fails (a
	// transient fate).
	pendingFail bool
	// blockedAt is the value of verifyRun.moves when the worker last met
	// a lock: it retries only after somebody else moved.
	blockedAt int
	// tx are the writes of its open transaction; txAll says one of them
	// touched everything.
	tx    []access
	txAll bool
}

// verifyRun is the search's view of one run.
type verifyRun struct {
	s     *walker
	r     *run
	depth int
	// cur is the worker the schedule is on (-1: none yet).
	cur    int
	budget budgets
	// failed counts, per event, the deliveries its transient fate failed.
	failed []int
	ws     []wview
	moves  int
	// last is the choice taken last, applied by play after choose.
	last *trans
	// dbDirty says the database may have changed since dbSum was read.
	// sysKey is the last state's name without the worker the schedule
	// is on (for the soundness tests).
	sysKey  search.Key
	dbDirty bool
	dbSum   search.Key
	dbRead  bool
	// atStop are the situations reached when the schedule stopped.
	atStop    map[string]int
	stopKey   search.Key
	stopKeyOK bool
	abandoned bool
	cut       bool
	// preempted counts the preemptions the schedule made.
	preempted int
	// undone is the worker that made the move taken last when a crash of
	// it would undo that move (-1: none): its crash is not offered then.
	undone int
	// parts are the parts of the last state's name (see keyPart).
	parts []keyPart
}

// keyPart is one part of a state's name, for a report of what differs
// between two plays of one schedule.
type keyPart struct {
	what string
	sum  search.Key
}

// differing names the parts that differ between a and b.
func differing(a, b []keyPart) []string {
	var out []string
	for _, p := range b {
		found, same := false, false
		for _, q := range a {
			if q.what == p.what {
				found, same = true, q.sum == p.sum
				break
			}
		}
		if !found || !same {
			out = append(out, p.what)
		}
	}
	for _, q := range a {
		if !slices.ContainsFunc(b, func(p keyPart) bool { return p.what == q.what }) {
			out = append(out, q.what)
		}
	}
	return out
}

// verifyKey is the context key of the search playing a run.
type verifyKey struct{}

// verifierOf returns the search's view of r when ctx carries a search.
func verifierOf(ctx context.Context, r *run) *verifyRun {
	s, _ := ctx.Value(verifyKey{}).(*walker)
	if s == nil {
		return nil
	}
	v := &verifyRun{s: s, r: r, cur: -1, undone: -1, budget: s.ch.Budget(), failed: make([]int, len(r.s.Events)), ws: make([]wview, len(r.workers)), dbDirty: true}
	for i, w := range r.workers {
		v.ws[i] = wview{inc: w.inc, blockedAt: -1}
	}
	s.current = v
	return v
}

// nextStep is the i-th step of the schedule: the scenario's, or, under
// Verify, the one the search chooses now (appended to the scenario).
func (r *run) nextStep(i int) (Step, bool) {
	if r.v != nil {
		st, ok := r.v.choose()
		if ok {
			r.s.Steps = append(r.s.Steps, st)
		}
		return st, ok
	}
	if i < len(r.s.Steps) {
		return r.s.Steps[i], true
	}
	return Step{}, false
}

// abandoned marks a run the search stops short: a state already explored
// or every choice asleep. Its outcome is not judged.
var abandonedRun = Breach{Law: LawRuns, Summary: "abandoned by the search"}

// Returned is sqlhook.Observer: what a call returned joins the worker's
// history, which names its state.
// Calls of several goroutines may return at once (workers whose contexts
// ended together, a library's goroutine), so the histories are written
// under the run's lock.
func (h hook) Returned(c sqlhook.Call, res driver.Result, err error) {
	if !h.w.crashing.Load() {
		h.w.r.trace.traceReturned(c, res, err)
	}
	if v := h.w.r.v; v != nil {
		h.w.r.mu.Lock()
		defer h.w.r.mu.Unlock()
		v.returned(h.w, c, res, err)
	}
}

// Row is sqlhook.Observer: each row a query handed the worker joins its
// history.
func (h hook) Row(c sqlhook.Call, dest []driver.Value) {
	if !h.w.crashing.Load() {
		h.w.r.trace.traceRow(c, dest)
	}
	if v := h.w.r.v; v != nil {
		h.w.r.mu.Lock()
		defer h.w.r.mu.Unlock()
		v.row(h.w, dest)
	}
}

// RowsClosed is sqlhook.RowsReporter: how a query's rows ended joins the
// query's trace line (see results.go).
func (h hook) RowsClosed(c sqlhook.Call, read, more int) {
	if !h.w.crashing.Load() {
		h.w.r.trace.traceRowsClosed(c, read, more)
	}
}

func (v *verifyRun) returned(w *worker, c sqlhook.Call, res driver.Result, err error) {
	if w.crashing.Load() {
		return
	}
	e := &v.s.histScratch
	e.reset()
	e.byte('R')
	e.str(string(c.Op))
	e.str(c.SQL)
	for _, a := range c.Args {
		e.value(a.Value)
	}
	if res != nil && changes(c.SQL) {
		n, e1 := res.RowsAffected()
		e.int(n)
		e.byte(b2byte(e1 == nil))
		if isInsert(c.SQL) && e1 == nil && n > 0 {
			// The id an INSERT made. An insert that inserted nothing (ON
			// CONFLICT DO NOTHING, INSERT OR IGNORE that conflicted)
			// answers the connection's last insert instead, which a
			// pooled connection carries over from an earlier schedule:
			// no state is named by it.
			id, e2 := res.LastInsertId()
			e.int(id)
			e.byte(b2byte(e2 == nil))
		}
	}
	if err != nil {
		e.byte('E')
		e.str(err.Error())
	}
	v.ws[w.n-1].hist.add(e)
}

func (v *verifyRun) row(w *worker, dest []driver.Value) {
	if w.crashing.Load() {
		return
	}
	e := &v.s.histScratch
	e.reset()
	e.byte('W')
	for _, d := range dest {
		e.value(d)
	}
	v.ws[w.n-1].hist.add(e)
}

func b2byte(b bool) byte {
	if b {
		return 1
	}
	return 0
}

// stringOf renders a value of a driver's own type.
func stringOf(v any) string { return fmt.Sprint(v) }

// choose decides the next step, or ends the schedule (false).
func (v *verifyRun) choose() (Step, bool) {
	v.settle()
	ts, boundPruned := v.enabled()
	var key search.Key
	keyOK := false
	if !v.s.cfg.verify.noCache || v.s.cfg.verify.states != nil {
		key, keyOK = v.key()
		if f := v.s.cfg.verify.states; f != nil && keyOK {
			f(v.sysKey)
		}
		if v.s.cfg.verify.noCache {
			keyOK = false
		}
	}
	i := v.s.decide(v, ts, boundPruned, key, keyOK)
	switch i {
	case search.Abandon:
		v.abandon()
		return Step{}, false
	case search.Cut:
		v.cut = true
		return Step{}, false
	}
	t := ts[i]
	if t.id.kind == kStop {
		v.atStop = make(map[string]int, len(v.r.situations))
		for k, n := range v.r.situations {
			v.atStop[k] = n
		}
		v.stopKey, v.stopKeyOK = key, keyOK
		if keyOK {
			if q, ok := v.s.quietEndOf(key); ok {
				// This end state was judged before: its verdict is known.
				v.s.quietHit(v, q)
				v.abandon()
			}
		}
		return Step{}, false
	}
	v.apply(&t)
	return t.step, true
}

func (v *verifyRun) abandon() {
	v.abandoned = true
	if v.r.failure == nil {
		v.r.failure = &abandonedRun
	}
}

// apply spends what t spends; play then makes the step.
func (v *verifyRun) apply(t *trans) {
	if t.spend >= 0 {
		v.budget[t.spend]--
	}
	if t.cost > 0 {
		v.budget[bPreempt] -= t.cost
		v.preempted += int(t.cost)
	}
	if t.id.workerMove() || t.id.kind == kCrash {
		v.moves++
	}
	if t.id.workerMove() {
		v.cur = int(t.id.w)
	}
	if t.forced {
		w := v.r.workers[t.id.w]
		v.failed[v.eventIndex(w.ev.EventID)]++
		v.ws[t.id.w].pendingFail = false
	}
	if t.dirty {
		v.dbDirty = true
	}
	if t.id.kind == kRun {
		wv := &v.ws[t.id.w]
		wv.tx = append(wv.tx, t.txWrites...)
		if t.fp.ws&resDB != 0 && v.r.workers[t.id.w].at.call.InTx {
			wv.txAll = true
		}
		if t.ends {
			wv.tx, wv.txAll = nil, false
		}
	}
	v.undone = -1
	if t.id.kind == kRun && !t.forced && (t.undone || v.s.cfg.verify.mutant == "crash-undoes-anything") {
		v.undone = int(t.id.w)
	}
	v.depth++
	v.last = t
}

// settle brings the view up to date with the step play just made: new
// deliveries, restarts, lock waits.
func (v *verifyRun) settle() {
	// The histories are written by the workers' calls under the run's
	// lock (see Returned); a worker a context's deadline woke has no other
	// ordering with the scheduler that the race detector can see.
	v.r.mu.Lock()
	defer v.r.mu.Unlock()
	for i, w := range v.r.workers {
		wv := &v.ws[i]
		if w.inc != wv.inc {
			// A restarted incarnation: its memory is gone.
			wv.hist.reset()
			wv.inc, wv.seen, wv.lastDelivery, wv.pendingFail, wv.tx, wv.txAll = w.inc, false, 0, false, nil, false
		}
		if v.r.lg != nil {
			if id := logJobOf(w); w.state != idle && id != 0 && id != wv.lastDelivery {
				// Each call of a log consumer starts with no memory of
				// the one before.
				wv.lastDelivery = id
				wv.hist.reset()
				e := &v.s.scratch
				e.reset()
				encodeLogJob(e, w.lg.job)
				wv.hist.add(e)
				wv.seen = true
			}
		} else if w.state != idle && w.d.ID != wv.lastDelivery {
			wv.lastDelivery = w.d.ID
			if v.r.c.Worker == nil {
				// A Handler starts afresh with each message.
				wv.hist.reset()
			}
			m := w.d.Message
			e := &v.s.scratch
			e.reset()
			e.byte('M')
			e.str(m.Key)
			e.int(int64(m.Attempts))
			e.str(m.LastError)
			e.bytes(m.Payload)
			wv.hist.add(e)
			wv.seen = true
			_, n, _ := v.s.fates[v.eventIndex(w.ev.EventID)].failures()
			wv.pendingFail = v.failed[v.eventIndex(w.ev.EventID)] < n
		}
		if w.state == blocked && v.last != nil && int(v.last.id.w) == i && v.last.id.workerMove() {
			wv.blockedAt = v.moves
		}
	}
}

// historyOf reads worker i's history under the run's lock (see settle).
func (v *verifyRun) historyOf(i int) search.Key {
	v.r.mu.Lock()
	defer v.r.mu.Unlock()
	return v.ws[i].hist.s
}

func (v *verifyRun) eventIndex(id string) int {
	for i, e := range v.r.s.Events {
		if e.ID == id {
			return i
		}
	}
	return 0
}

// movable reports whether worker i is parked in a delivery and can move:
// switching away from it is a preemption.
func (v *verifyRun) movable(i int) bool { return i >= 0 && v.r.workers[i].state == parked }

// enabled lists the choices at this point, in the order the search tries
// them: the end or the tick, the worker the schedule is on, the other
// workers, then the faults. boundPruned counts the moves over the
// preemption budget.
func (v *verifyRun) enabled() ([]trans, int) {
	r := v.r
	b := v.budget
	curParked := v.movable(v.cur)
	cost := func(i int) int16 {
		if curParked && i != v.cur {
			return 1
		}
		return 0
	}
	order := make([]int, 0, len(r.workers))
	if v.cur >= 0 {
		order = append(order, v.cur)
	}
	for i := range r.workers {
		if i != v.cur {
			order = append(order, i)
		}
	}
	othersParked := func(i int) bool {
		for j, o := range r.workers {
			if j != i && o.state == parked {
				return true
			}
		}
		return false
	}
	var eligible []broker.Message
	eligibleRead, idleSeen := false, false
	moves := v.s.moves[:0]
	defer func() { v.s.moves = moves[:0] }()
	boundPruned := 0
	add := func(t trans) {
		if t.cost > b[bPreempt] {
			boundPruned++
			return
		}
		moves = append(moves, t)
	}
	for _, i := range order {
		w := r.workers[i]
		switch w.state {
		case parked:
			t := v.runParked(i, w)
			t.cost = cost(i)
			add(t)
		case blocked:
			if !othersParked(i) || v.moves > v.ws[i].blockedAt {
				add(trans{id: tid{kRun, int8(i), 0}, step: Step{Op: OpRun, Worker: i + 1}, fp: footprint{all: true}, spend: -1, cost: cost(i), dirty: true})
			}
		case down:
			// Its factory failed at a restart: starting it again may
			// touch anything its factory does.
			add(trans{id: tid{kRun, int8(i), 0}, step: Step{Op: OpRun, Worker: i + 1}, fp: footprint{all: true}, spend: -1, cost: cost(i), dirty: true})
		case idle:
			if r.lg != nil {
				v.logIdle(i, cost(i), add)
				continue
			}
			if !eligibleRead {
				eligible, eligibleRead = r.b.Eligible(Group), true
			}
			if idleSeen && !v.s.cfg.verify.noCache && (v.s.symmetric() || v.s.cfg.verify.mutant == "idle-fold-ignores-identity") {
				// Idle workers of a Handler are alike: a delivery to
				// another one reaches the state a delivery to the first
				// reaches, but for the workers' names (see Symmetry). The
				// cache would meet it one step later, after replaying the
				// whole prefix.
				continue
			}
			idleSeen = true
			for k, m := range eligible {
				add(trans{id: tid{kRecv, int8(i), m.Offset}, step: Step{Op: OpRun, Worker: i + 1, Pick: k},
					fp: footprint{ws: own(i) | msgBit(m.Offset), rs: resClock}, spend: -1, cost: cost(i)})
			}
		}
	}
	// One allocation at most for what follows (a new frame of the search
	// keeps the slice; else the next point reuses it, see decide): a crash
	// per worker, a duplicate per event, the stop or the tick, the moves, a
	// failure per worker, the advances.
	//
	// Crashes and duplicates come first. They commute with many moves of
	// the other workers (a duplicate with every call; a crash with their
	// deliveries and acks, and with their calls too while its worker is
	// idle or waits for its ack outside a transaction), and a choice tried
	// first at a point sleeps in the subtrees of the choices tried after
	// it that it commutes with. Tried last, a crash would be tried again
	// after each move of another worker: as many schedules, each reaching
	// a state that one schedule, crashing first and going on, reaches too.
	out := slices.Grow(v.s.spareChoices[:0], 2+len(moves)+2*len(r.workers)+len(r.s.Events)+len(v.s.bounds.Durations))
	if b[bCrash] > 0 {
		for i, w := range r.workers {
			if r.lg != nil {
				// A log client's positions are lost even idle; the
				// restart gives its partitions anew.
				out = append(out, trans{id: tid{kCrash, int8(i), 0}, step: Step{Op: OpCrash, Worker: i + 1}, fp: footprint{all: true}, spend: bCrash, dirty: true})
				continue
			}
			if w.state == idle && (r.c.Worker == nil || !v.ws[i].seen) {
				continue // nothing to lose
			}
			if i == v.undone && !v.s.cfg.verify.noPOR {
				// Its crash before that move, with the same budget, was
				// offered at the point before (see crashUndoes). The
				// state a crash here would reach is reached, and so is
				// its situation: counted where the search first meets
				// the point, not again on each replay of it.
				if !v.s.ch.Replaying() {
					r.reach(w.at.situation())
				}
				continue
			}
			fp := footprint{ws: own(i), rs: resClock}
			if w.state != idle && !(w.at.settle && !v.inTx(w)) {
				// Its connections close under what they were doing.
				fp.ws |= resDB
			}
			out = append(out, trans{id: tid{kCrash, int8(i), 0}, step: Step{Op: OpCrash, Worker: i + 1}, fp: fp, spend: bCrash})
		}
	}
	if b[bDup] > 0 && r.lg == nil {
		for i := range r.s.Events {
			out = append(out, trans{id: tid{kDup, -1, int64(i)}, step: Step{Op: OpDuplicate, Pick: i}, fp: footprint{ws: resOffsets}, spend: bDup})
		}
	}
	if len(moves) == 0 {
		quiet, next := v.quiet()
		if quiet {
			out = append(out, trans{id: tid{kind: kStop, w: -1}, fp: footprint{all: true}, spend: -1})
		} else {
			d := max(next-r.clock.NowMs(), 1)
			out = append(out, trans{id: tid{kind: kTick, w: -1}, step: Step{Op: OpAdvance, Ms: d}, fp: footprint{all: true}, spend: -1})
		}
	}
	out = append(out, moves...)
	if b[bFail] > 0 {
		for i, w := range r.workers {
			if w.state == parked && w.at.injectable() && !v.ws[i].pendingFail {
				t := trans{id: tid{kFail, int8(i), 0}, step: Step{Op: OpFail, Worker: i + 1}, fp: footprint{ws: own(i), rs: resClock}, spend: bFail, cost: cost(i)}
				if t.cost > b[bPreempt] {
					boundPruned++
					continue
				}
				out = append(out, t)
			}
		}
	}
	if b[bRebalance] > 0 && r.lg != nil {
		out = v.logRebalances(out)
	}
	if b[bAdvance] > 0 && len(moves) > 0 {
		if quiet, next := v.quiet(); !quiet && next > r.clock.NowMs() {
			out = append(out, trans{id: tid{kAdvance, -1, 0}, step: Step{Op: OpAdvance, Ms: next - r.clock.NowMs()}, fp: footprint{all: true}, spend: bAdvance})
		}
		for k, d := range v.s.bounds.Durations {
			out = append(out, trans{id: tid{kAdvance, -1, int64(k + 1)}, step: Step{Op: OpAdvance, Ms: d.Milliseconds()}, fp: footprint{all: true}, spend: bAdvance})
		}
	}
	if b[bReplay] > 0 {
		out = append(out, trans{id: tid{kind: kReplay, w: -1}, step: Step{Op: OpReplay}, fp: footprint{all: true}, spend: bReplay})
	}
	return out, boundPruned
}

// quiet is the broker's Quiet, the log's on a log run (as drain reads it).
func (v *verifyRun) quiet() (bool, int64) {
	if v.r.lg != nil {
		q, next := v.r.quietLog()
		return q, next + startMs
	}
	return v.r.b.Quiet()
}

func (v *verifyRun) inTx(w *worker) bool {
	open, _ := w.conn.InTx()
	return open
}

// runParked is the move of parked worker i: its call, its settle, its
// handler.Point.
func (v *verifyRun) runParked(i int, w *worker) trans {
	t := trans{id: tid{kRun, int8(i), 0}, step: Step{Op: OpRun, Worker: i + 1}, spend: -1}
	fp := footprint{ws: own(i), rs: resClock}
	p := w.at
	if v.r.lg != nil {
		if lfp, ok := v.logParked(i, w); ok {
			t.fp, t.dirty = lfp, p.commit != nil
			return t
		}
	}
	switch {
	case p.settle:
		fp.ws |= msgBit(w.d.Message.Offset)
		if p.result != nil {
			fp.ws |= resDLQ // a nack may spend the attempts, a poison dead-letters
		}
	case p.what != "":
		fp.ws |= resExt
	default:
		v.callFootprint(i, p.call, &fp, &t)
		if v.ws[i].pendingFail && p.injectable() {
			// The transient fate fails this call: it never runs.
			t.forced, t.step.Op = true, OpFail
			fp, t.dirty, t.txWrites, t.ends = footprint{ws: own(i), rs: resClock}, false, nil, false
		}
	}
	t.fp = fp
	return t
}

// crashUndoes reports whether a crash of a worker right after it made
// call c leaves the state a crash right before c leaves; for a statement,
// shape is what it touches (all: it could not be read). Then the search
// does not offer that crash: the crash before c was offered at the point
// before, with the same budgets (the move of c spends none), and what
// follows a crash does not depend on where it struck (the worker starts
// again from nothing, the delivery waits for its ack timeout).
//
// That holds on SQLite for a call whose every effect the crash's
// rollback takes back: a BEGIN, a ROLLBACK, the end of a query's rows, a
// read, and a write inside a transaction (SQLite has no sequence that
// moves outside one: a rowid or an AUTOINCREMENT counter is written by
// the transaction). A write run on its own commits, and so does a COMMIT;
// a statement the scanner cannot read may be a COMMIT in words; on
// PostgreSQL and MySQL a write inside a transaction may move a sequence
// that the rollback leaves moved.
func crashUndoes(sqlite bool, c sqlhook.Call, shape sqlShape) bool {
	if !sqlite {
		return false
	}
	switch c.Op {
	case sqlhook.Begin, sqlhook.Rollback, sqlhook.RowsEnd:
		return true
	case sqlhook.Exec, sqlhook.Query:
		if shape.all {
			return false
		}
		return c.InTx || !slices.ContainsFunc(shape.acc, func(a access) bool { return a.write })
	}
	return false
}

// callFootprint adds what call c of worker i touches.
func (v *verifyRun) callFootprint(i int, c sqlhook.Call, fp *footprint, t *trans) {
	sqlite := v.s.sqlite
	wv := &v.ws[i]
	t.undone = crashUndoes(sqlite, c, sqlShape{})
	switch c.Op {
	case sqlhook.Begin:
		// A DEFERRED BEGIN takes no lock: SQLite takes it at the
		// transaction's first statement, whose footprint has it. One that
		// begins IMMEDIATE or EXCLUSIVE takes the write lock at once.
		if sqlite && !v.s.lockFreeBegin {
			fp.ws |= resLock
		}
	case sqlhook.Commit, sqlhook.Rollback:
		if sqlite {
			fp.ws |= resLock
		}
		if wv.txAll {
			fp.ws |= resDB
		}
		fp.acc = append(fp.acc, wv.tx...)
		t.ends = true
		t.dirty = c.Op == sqlhook.Commit
		if v.s.snapshot && t.dirty {
			// What another transaction's first read will see.
			fp.ws |= resSnap
		}
	case sqlhook.RowsEnd:
		if sqlite {
			fp.rs |= resLock
		}
	case sqlhook.Exec, sqlhook.Query:
		sh := v.s.footprintOf(c)
		writes := sh.all
		for _, a := range sh.acc {
			writes = writes || a.write
		}
		if writes && v.s.complexSchema {
			sh = sqlShape{all: true}
		}
		t.undone = crashUndoes(sqlite, c, sh)
		if sh.all {
			// Inside a transaction, apply records that its commit
			// touches everything too.
			fp.ws |= resDB
			t.dirty = true
		} else {
			fp.acc = append(fp.acc, sh.acc...)
			if c.InTx {
				for _, a := range sh.acc {
					if a.write {
						t.txWrites = append(t.txWrites, a)
					}
				}
				// On PostgreSQL and MySQL a write may move a sequence (a
				// serial, an identity, AUTO_INCREMENT) at once, and a
				// rollback does not move it back: the state's name must
				// read it again, whether the transaction commits or not.
				t.dirty = writes && v.s.counters
			} else if writes {
				t.dirty = true
			}
		}
		if v.s.snapshot {
			// A read inside a transaction may take its snapshot of the
			// whole database; a write outside one commits at once.
			switch {
			case c.InTx && !writes:
				fp.rs |= resSnap
			case !c.InTx && writes:
				fp.ws |= resSnap
			}
		}
		if sqlite {
			// SQLite locks the whole database: a read takes or keeps a
			// shared lock (a read-only transaction begins DEFERRED and
			// takes it at its first read), a write the write lock. Reads
			// commute with reads; nothing else does.
			if c.Op == sqlhook.Exec || writes {
				fp.ws |= resLock
			} else {
				fp.rs |= resLock
			}
		}
	default:
		fp.ws |= resDB
		t.dirty = true
	}
}

// key names the state, or reports that it cannot be named here (on
// PostgreSQL while a transaction is open). See Explore for what the name
// holds and when that is sound.
func (v *verifyRun) key() (search.Key, bool) {
	r := v.r
	if !v.s.sqlite {
		for _, w := range r.workers {
			if w.state != idle && v.inTx(w) {
				return search.Key{}, false
			}
		}
	}
	if v.dbDirty {
		sum, err := v.s.dump(r)
		switch {
		case err == nil:
			v.dbSum, v.dbDirty, v.dbRead = sum, false, true
		case v.dbRead && r.db.IsBusy(err):
			// A worker holds SQLite's write lock (memdb lets nobody read
			// then). Nothing was committed since the last read: a commit
			// releases the lock before the next decision point, and
			// nobody else can commit while it is held. That read still
			// names the committed content.
		default:
			v.s.ch.Fail(fmt.Errorf("consumertest: read the database to name a state: %w", err))
			return search.Key{}, false
		}
	}
	e := &v.s.keyEnc
	e.reset()
	v.parts = v.parts[:0]
	part := func(what string, from int) { v.parts = append(v.parts, keyPart{what, sumOf(e.b[from:])}) }
	now := r.clock.NowMs()
	e.int(now - startMs)
	part("the scenario's time", 0)
	mutant := v.s.cfg.verify.mutant
	if mutant != "key-ignores-db" {
		e.sum(v.dbSum)
		part("the database's content", len(e.b)-16)
	}
	from := len(e.b)
	last := v.s.lastDelivery[:0]
	r.b.EachMessage(func(m *broker.Message, status broker.Status, eligibleAt, deliveredAt, lastDelivery int64) {
		last = append(last, [2]int64{m.Offset, lastDelivery})
		if mutant == "key-ignores-broker" {
			return
		}
		e.int(m.Offset)
		e.str(m.Key)
		e.str(string(m.Origin))
		e.int(int64(m.Attempts))
		e.str(m.LastError)
		e.str(string(status))
		switch status {
		case broker.Pending:
			e.int(eligibleAt - now)
		case broker.Inflight:
			e.int(deliveredAt - now)
		}
	})
	v.s.lastDelivery = last
	e.byte('D')
	r.b.EachDLQ(func(d *broker.DLQEntry) {
		e.int(d.Offset)
		e.int(int64(d.Attempts))
		e.str(d.LastError)
		e.str(d.Key)
		e.byte(b2byte(d.Poison))
	})
	for _, n := range v.failed {
		e.int(int64(n))
	}
	if r.lg != nil && mutant != "key-ignores-broker" {
		encodeLogState(e, r.lg)
	}
	part("the broker's messages and dead-letter queue", from)
	e.mark = len(e.b)
	tuples := v.s.tuples[:0]
	for i, w := range r.workers {
		t := &v.s.tupleEnc[i]
		t.reset()
		wv := &v.ws[i]
		t.byte(byte(w.state))
		t.byte(b2byte(v.cur == i && w.state == parked))
		if r.c.Worker != nil {
			t.int(int64(w.inc))
		}
		if (w.state != idle || r.c.Worker != nil) && mutant != "key-ignores-history" {
			h := v.historyOf(i)
			t.sum(h)
			v.parts = append(v.parts, keyPart{v.s.labelsOf(w.name).history, h})
		}
		histAt := len(t.b)
		if r.lg != nil {
			// A log client's memory and the call in hand (its
			// history holds what the database returned to it).
			encodeLogWorker(t, r, w)
		}
		if w.state != idle {
			if r.lg == nil {
				m := w.d.Message
				current := false
				for _, l := range last {
					if l[0] == m.Offset {
						current = l[1] == w.d.ID
					}
				}
				t.int(m.Offset)
				t.int(int64(m.Attempts))
				t.byte(b2byte(current))
			}
			encodePoint(t, w.at)
			if w.state == blocked && w.at.call.InEngine && w.at.call.Timeout > 0 {
				// How long it has waited decides when its busy timeout
				// gives up (see busyTimeouts).
				t.int(r.now() - w.waitFrom)
			}
			t.byte(b2byte(wv.pendingFail))
			if w.at.result != nil {
				t.str(w.at.result.Error())
			}
		}
		if w.state == blocked {
			t.byte(b2byte(v.moves > wv.blockedAt))
		}
		place := append(append(v.s.placeBuf[:0], t.b[:2]...), t.b[histAt:]...)
		v.s.placeBuf = place
		v.parts = append(v.parts, keyPart{v.s.labelsOf(w.name).place, sumOf(place)})
		tuples = append(tuples, t.b)
	}
	v.s.tuples = tuples
	v.s.perm = v.s.perm[:0]
	for i := range tuples {
		v.s.perm = append(v.s.perm, i)
	}
	if v.s.symmetric() {
		// Workers running the same Handler are interchangeable.
		slices.SortStableFunc(v.s.perm, func(a, b int) int { return bytes.Compare(tuples[a], tuples[b]) })
	}
	for _, i := range v.s.perm {
		e.bytes(tuples[i])
	}
	if v.s.cfg.verify.states != nil {
		// The same name, but for the worker the schedule is on.
		sys := &v.s.scratch
		sys.reset()
		sys.b = append(sys.b, e.b[:e.mark]...)
		ts := slices.Clone(tuples)
		for i := range ts {
			ts[i][1] = 0
		}
		if r.c.Worker == nil && r.lg == nil {
			slices.SortFunc(ts, bytes.Compare)
		}
		for _, t := range ts {
			sys.bytes(t)
		}
		v.sysKey = sumOf(sys.b)
	}
	return sumOf(e.b), true
}

// encodePoint writes where a worker is parked: its call with its
// arguments, its handler.Point, or its settle.
func encodePoint(e *enc, p point) {
	e.byte(b2byte(p.settle))
	e.str(p.what)
	e.str(string(p.call.Op))
	e.str(p.call.SQL)
	e.int(int64(len(p.call.Args)))
	for _, a := range p.call.Args {
		e.value(a.Value)
	}
}

// isInsert reports a statement that begins with INSERT or REPLACE.
func isInsert(query string) bool { return verb(query) == "insert" }

// verb is the statement's kind: insert (replace too), update, delete,
// select, or its first word for anything else (create, pragma, ...). A
// statement that starts with WITH is the kind of its main statement.
func verb(query string) string {
	if v, ok := verbs.load(query); ok {
		return v
	}
	return verbs.store(query, lexVerb(query))
}

// verbs are the verbs of the statements met (a statement's text is
// its verb's).
var verbs textMemo[string, string]

// lexVerb is verb, read from the statement's tokens.
func lexVerb(query string) string {
	toks, _ := sqlscan.Lex(query)
	depth, with := 0, false
	for _, t := range toks {
		switch t.Kind {
		case sqlscan.LParen:
			depth++
		case sqlscan.RParen:
			depth--
		case sqlscan.Word:
			if depth > 0 {
				continue
			}
			w := strings.ToLower(t.Text)
			if w == "replace" {
				w = "insert"
			}
			if !with {
				if w != "with" {
					return w
				}
				with = true
				continue
			}
			switch w {
			case "insert", "update", "delete", "select":
				return w
			}
		}
	}
	return ""
}

// changes reports whether a statement's rows-affected count is its own:
// only an INSERT, UPDATE or DELETE sets it; after any other statement
// (CREATE TABLE IF NOT EXISTS, a PRAGMA) SQLite answers the count of the
// connection's last one, which a pooled connection carries over from an
// earlier schedule.
func changes(query string) bool {
	switch verb(query) {
	case "insert", "update", "delete":
		return true
	}
	return false
}
