package consumerharness

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing/synctest"
	"time"
	"unicode/utf8"

	teamhandler "github.com/idemcheck/idemcheck/consumertest/handler"
	"github.com/idemcheck/idemcheck/impl/contract/broker"
	"github.com/idemcheck/idemcheck/impl/contract/clock"
	"github.com/idemcheck/idemcheck/impl/contract/event"
	"github.com/idemcheck/idemcheck/impl/contract/handler"
	"github.com/idemcheck/idemcheck/impl/reference/membroker"
	"github.com/idemcheck/idemcheck/internal/consumerharness/backend"
	"github.com/idemcheck/idemcheck/internal/consumerharness/sqlhook"
	"github.com/idemcheck/idemcheck/internal/goroutine"
	"github.com/idemcheck/idemcheck/internal/law"
	"github.com/idemcheck/idemcheck/internal/situation"
	"github.com/idemcheck/idemcheck/internal/sqlscan"
)

// The topic and consumer group every scenario uses.
const (
	Topic = "orders"
	Group = "consumer"
)

// startMs is the scenario's time zero, 2000-01-01T00:00:00Z: the time a
// testing/synctest bubble starts at, so that inside Check the handler's
// time.Now and the events' occurredAt agree.
const startMs = 946684800000

// maxActions bounds a drain: a consumer that has not quiesced after this
// many calls is looping.
const maxActions = 5000

// hangAfter is how long a worker may run between two calls before the
// harness calls it hung: on the bubble's clock inside a bubble (a handler
// blocked on the bubble's own channels or timers), on the machine's
// clock outside one and for the guard that watches a bubble from outside
// (a handler blocked on something outside the bubble). It only ever fires
// on a handler that blocks outside the database.
var hangAfter = 10 * time.Second

// ErrInjected is the transient error a Fail step makes a call return:
// package consumertest/handler's, where a handler can name it without
// linking the harness.
var ErrInjected = teamhandler.ErrInjected

// errCrashing is what calls made while a crashed worker unwinds return.
var errCrashing = errors.New("consumertest: the worker crashed")

type wstate int

const (
	idle wstate = iota
	parked
	blocked
	// running: the worker moves on its own, outside the schedule (its
	// context ended while it was parked, and it went on with the error),
	// until it parks again.
	running
	// down: its Worker factory failed at a restart (a table it creates
	// met another worker's lock, say): it starts again when the schedule
	// moves it, as a service's supervisor restarts a process.
	down
)

// decision is what the scheduler tells a parked worker.
type decision int

const (
	proceed decision = iota
	fail
	crash
	retry
	giveUp
	// expired: the context of the parked call (or of its transaction)
	// ended while the worker waited; the call returns its error.
	expired
)

// point is where a worker is parked.
type point struct {
	call   sqlhook.Call
	what   string // a handler.Point or a broker call
	settle bool   // the worker answered and waits to ack/nack
	result error
	busy   error // blocked: the lock conflict
	// commit is the broker commit a log consumer's worker is parked at.
	commit *commitReq
}

func (p point) String() string {
	if p.what != "" {
		return p.what
	}
	if len(p.call.Notes) > 0 {
		return p.call.String() + " -- machine's clock: " + strings.Join(p.call.Notes, "; ")
	}
	return p.call.String()
}

// situation is the coverage situation of a crash at p.
func (p point) situation() string {
	switch {
	case p.commit != nil:
		return situation.LogCrashAtCommit
	case p.settle:
		return situation.ConsumerCrashAtSettle
	case p.what != "":
		return situation.ConsumerCrashAtPoint
	}
	return "crash-at-" + strings.ReplaceAll(string(p.call.Op), " ", "-")
}

func (p point) injectable() bool {
	if p.commit != nil {
		return true
	}
	if p.settle || p.what != "" {
		return false
	}
	switch p.call.Op {
	case sqlhook.Begin, sqlhook.Exec, sqlhook.Query:
		return true
	}
	return false
}

type evKind int

const (
	evParked evKind = iota
	evBlocked
	evDone
	evExited
	evPanic
	// evStarted: the Worker factory returned (its error in startErr).
	evStarted
)

type wevent struct {
	w     *worker
	kind  evKind
	p     point
	panic string
	// hung, with evPanic, is set when the handler panicked with an error
	// that says it hung (see handlerHung): its text.
	hung string
	// The Worker factory's results, with evStarted.
	fn       handler.Func
	closer   io.Closer
	startErr error
}

type worker struct {
	r    *run
	n    int
	name string
	inc  int
	// gid names the goroutine of the incarnation's handler (see park).
	gid goroutine.ID
	// woke is set while the worker moves on its own (state running): its
	// events go to pending instead of the scheduler, which collects them
	// once the bubble is settled (see collectWoken). expiry is the call
	// at which its context ended. Both under r.mu.
	woke    atomic.Bool
	pending *wevent
	expiry  *expiry
	state   wstate
	at      point
	// waitFrom is the scenario's time (ms) at which a blocked worker
	// began to wait for its lock: its busy timeout counts from there.
	waitFrom int64
	fn       handler.Func
	closer   io.Closer
	startErr error
	// conn are the incarnation's connections: sqlhook's Connector under
	// db, or pgx's pool on the pgx route (see pgx.go).
	conn   conns
	db     *sql.DB
	pgx    *pgxWorker
	resume chan decision
	// deadlocked is set when the scheduler gives the worker's wait up in
	// a deadlock between workers (see retry), until its hook reads it.
	deadlocked bool
	// crashing is set while a crashed worker's goroutine unwinds.
	crashing atomic.Bool
	jobs     chan job
	d        broker.Delivery
	ev       event.OrderPaid
	// rec indexes the record of the delivery in hand in run.deliveries
	// (-1: none, while the worker starts); on a log broker, the first of
	// the batch's records, nrec of them (a fault or an answer is every
	// record's of the batch).
	rec, nrec int
	// cancel ends the context of the delivery in hand.
	cancel context.CancelFunc
	// conflicts are the busy answers it got at once since it last parked
	// (under r.mu; see hook.Conflict).
	conflicts []conflict
	// starting is set while the Worker factory runs; restarted says the
	// incarnation is a restart (a failure of its factory is then a breach
	// of law runs, not bad input).
	starting, restarted bool
	// lg is its client's state on a log broker (nil on a queue).
	lg *logWorker
}

// run is one scenario being played.
type run struct {
	// fresh is the Worker that reuses nothing, from the first of the
	// workers' Closers that reused something (handler.FreshWorkers).
	fresh   handler.Worker
	c       Consumer
	s       *Scenario
	db      backend.Database
	dbName  string // the backend's name, handed to the handler (handler.Database)
	clock   *clock.Virtual
	b       *membroker.Broker
	workers []*worker
	trace   *Trace
	events  chan wevent
	active  atomic.Pointer[worker]
	// hangAfter is the package's hangAfter when the run started.
	hangAfter time.Duration
	// progress counts the events received; dog fires when the scheduler
	// has waited for one worker for hangAfter (see wait). It is armed
	// only while the scheduler waits: a timer that ticked all along would
	// wake the bubble at every tick of a long move of time.
	progress atomic.Int64
	waiting  atomic.Bool
	dog      *time.Timer
	actions  int
	// cursor is the worker the drain moved last: it moves the next one
	// first (-1 before it moved any: w1 first).
	cursor int
	// offsets maps each produced event to its offset.
	offsets []int64
	// produced are the events produce published, with their payloads: a
	// delivery of one of them is read back without parsing its JSON.
	produced []producedEvent
	// deliveries records every delivery: what the consumer answered and
	// what the harness did to it (see Delivery).
	deliveries []Delivery
	// replayed is set once the stream has been replayed.
	replayed bool
	// lg is the log broker, for a consumer of one (nil: the queue broker).
	lg *logState

	// mu guards what goroutines other than the scheduler's write: the
	// workers' pending events and expiries, the actors, the notes.
	mu sync.Mutex

	// bubble is set when the run plays in a testing/synctest bubble.
	bubble bool
	// g watches the run from outside its bubble (nil outside one).
	g *guard
	// id labels the run's goroutines; loops counts its workers' goroutines.
	id     string
	loops  sync.WaitGroup
	closed bool
	baseG  int

	// situations counts what the run reached (see Situations).
	situations map[string]int

	// failure is a breach of law "runs": the run could not go on.
	failure *Breach

	// machineClock names what read the machine's clock (see
	// Outcome.MachineClock).
	machineClock []string
	// v, set under Verify, decides the steps and watches what each
	// worker is returned (verify_exec.go).
	v *verifyRun

	// schedG is the scheduler's goroutine: a call made on it (the Worker
	// factory's) runs at once.
	schedG goroutine.ID
	// free is set while the run starts or stops its workers, and outside
	// a bubble: the calls of goroutines other than a handler's then run
	// at once, unscheduled.
	free atomic.Bool
	// bg are the goroutines other than the handlers' that made calls
	// (see actors.go), by goroutine; bgKick tells the scheduler one
	// arrived; bgSeq counts them per worker, to name them; moves counts
	// the moves of every actor, so that a blocked one is retried only
	// after something moved.
	bg     map[goroutine.ID]*actor
	bgKick chan struct{}
	bgSeq  map[string]int
	moves  int
	// effects are the tables the Effects query reads (see traceCall).
	effects map[string]bool
	// found, during a discovery of the consumer's windows, is told of
	// every statement (see durations.go).
	found *durationSet
}

// noteMachineClock records what read the machine's clock, once.
func (r *run) noteMachineClock(what string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !slices.Contains(r.machineClock, what) {
		r.machineClock = append(r.machineClock, what)
	}
}

// clockDatabase points the database's own clock at the scenario's, and
// notes what in the schema and the queries stays on the machine's.
func (r *run) clockDatabase() {
	cl, ok := r.db.(backend.Clocked)
	if !ok {
		r.noteMachineClock("the database's own clock: the " + r.dbName + " backend does not follow the scenario's")
		return
	}
	cl.SetClock(func() time.Time { return time.UnixMilli(r.clock.NowMs()).UTC() })
	stmts := schemaStatements(r.c.Schema)
	for _, q := range append(stmts[:len(stmts):len(stmts)], r.c.Effects.Query, r.c.Dedupe) {
		_, notes := cl.Rewrite(q)
		for _, n := range notes {
			r.noteMachineClock(fmt.Sprintf("%s (the schema or a query of the harness: %s)", n, sqlscan.Short(q, 80)))
		}
	}
}

// newRun prepares a fresh database and the broker for s.
func newRun(ctx context.Context, be backend.Backend, c Consumer, s *Scenario, g *guard, bubble bool) (*run, error) {
	sched := goroutine.Current()
	db, err := be.Fresh(ctx)
	if err != nil {
		return nil, fmt.Errorf("%w: open a fresh %s database: %w", ErrBadInput, be.Name(), err)
	}
	if err := prepareSchema(ctx, db, c); err != nil {
		db.Close()
		return nil, err
	}
	clk := clock.NewVirtual(startMs)
	r := &run{c: c, s: s, db: db, dbName: be.Name(), clock: clk, b: membroker.New(clk, s.Policy, []string{Group}),
		trace: &Trace{}, events: make(chan wevent), bubble: bubble,
		id: fmt.Sprintf("r%d", runSeq.Add(1)), baseG: runtime.NumGoroutine(), g: g, hangAfter: hangAfter,
		cursor: -1, schedG: sched, bg: map[goroutine.ID]*actor{}, bgKick: make(chan struct{}, 1), bgSeq: map[string]int{}}
	r.free.Store(!bubble)
	r.found, _ = ctx.Value(durationsKey{}).(*durationSet)
	if g != nil {
		g.trace.Store(r.trace)
	}
	r.clockDatabase()
	r.dog = time.NewTimer(r.hangAfter)
	r.dog.Stop()
	return r, nil
}

// runSchema runs the team's schema, statement by statement, each
// rewritten by rw.
func runSchema(ctx context.Context, db *sql.DB, schema string, rw func(string) (string, []string)) error {
	for _, stmt := range schemaStatements(schema) {
		run, _ := rw(stmt)
		if _, err := db.ExecContext(ctx, run); err != nil {
			return fmt.Errorf("%w: the schema failed at %q: %w", ErrBadInput, stmt, err)
		}
	}
	return nil
}

// schemaStatements is sqlscan.Split(schema), read once per schema text:
// every run of a search reads its consumer's schema. The slice is shared:
// callers must not change it.
func schemaStatements(schema string) []string {
	if stmts, ok := schemas.load(schema); ok {
		return stmts
	}
	return schemas.store(schema, sqlscan.Split(schema))
}

// schemas are the statements of the schemas met, by the schema's text.
var schemas textMemo[string, []string]

// startWorkers starts every worker idle.
func (r *run) startWorkers() error {
	for i := range r.s.Workers {
		w := &worker{r: r, n: i + 1, name: fmt.Sprintf("w%d", i+1)}
		r.workers = append(r.workers, w)
		if err := r.start(w); err != nil {
			return err
		}
	}
	return nil
}

// start builds w's database handle, then its handler: the Worker factory
// runs on the worker's own goroutine, before its first delivery, and its
// calls (a library creating its tables) are the worker's, run at once
// unless one meets a lock (the worker then waits there as at any call,
// and the schedule goes on). The goroutines the factory starts carry a
// label naming it, so that one still running when the scenario ends is
// reported as the factory's.
func (r *run) start(w *worker) error {
	w.inc++
	if r.c.PgxHandler != nil {
		if err := r.startPgx(w); err != nil {
			return err
		}
	} else {
		opts := clockedOpts(r.db)
		if wdb, ok := r.db.(backend.Waiter); ok {
			// The engine waits for locks itself: each wait it would make is a
			// scheduling point, and a busy it answers at once is the call's.
			opts = append(opts, sqlhook.WithWaits(wdb.OpenWaiting))
		}
		c := sqlhook.NewConnector(r.db.Open, hook{w}, r.db.IsBusy, opts...)
		w.conn = c
		w.db = sql.OpenDB(c)
	}
	r.g.connector(w.conn)
	w.resume = make(chan decision)
	w.crashing.Store(false)
	w.woke.Store(false)
	w.pending, w.expiry = nil, nil
	w.fn, w.closer, w.rec, w.startErr = nil, nil, -1, nil
	w.state, w.at, w.starting = parked, point{}, true
	w.jobs = make(chan job)
	r.loops.Add(1)
	r.active.Store(w)
	if r.lg != nil {
		r.logRestarted(w)
	}
	go w.loop(w.jobs, fmt.Sprintf("%s#%d", w.name, w.inc))
	r.await(w)
	for r.failure == nil && w.starting && w.state == parked {
		r.act(w, proceed)
	}
	return w.startErr
}

// started records what the Worker factory returned.
func (r *run) started(w *worker, ev wevent) {
	w.starting, w.state, w.at = false, idle, point{}
	switch {
	case ev.startErr != nil:
		w.startErr = fmt.Errorf("%w: the Worker for %s failed to start: %w", ErrBadInput, w.name, ev.startErr)
	case ev.fn == nil:
		w.startErr = fmt.Errorf("%w: the Worker for %s returned a nil handler", ErrBadInput, w.name)
	}
	w.fn, w.closer = ev.fn, ev.closer
	if fw, ok := ev.closer.(handler.FreshWorkers); ok && r.fresh == nil {
		r.fresh = fw.FreshWorker()
	}
	if w.startErr != nil && w.restarted {
		w.state = down
		r.tracef(Entry{Kind: KindCrash, Worker: w.name}, "%s fails to start (%s): it is down, and starts again when the schedule moves it", w.name, quoteShort(ev.startErr.Error()))
	}
}

// restartDown starts a down worker again. A start that fails while no
// other worker may hold a lock in its way fails for good: law runs.
func (r *run) restartDown(w *worker) {
	r.stop(w, false)
	if err := r.start(w); err != nil && w.state == down && r.lockHolders(w) == "" && r.failure == nil {
		r.fail("worker-restarts", err.Error())
	}
}

// stop ends w: its goroutine, its connections and its Closer (before the
// connections when graceful: a service shutting down; after them for a
// crash, the process being gone).
func (r *run) stop(w *worker, graceful bool) {
	if w.db == nil && w.pgx == nil {
		return // stopped already
	}
	// Its goroutine is gone or idle: its delivery's context ends (not
	// before, or a waiting call would take it for a deadline).
	r.endDelivery(w)
	if w.jobs != nil {
		close(w.jobs)
		w.jobs = nil
	}
	if graceful && w.closer != nil {
		// A service shutting down closes its libraries before its
		// database: a library's Close may make a last call (a flush).
		_ = w.closer.Close()
		w.closer = nil
	}
	w.conn.Kill()
	if w.db != nil {
		w.db.Close()
		w.db = nil
	}
	if w.pgx != nil {
		w.pgx.close()
		w.pgx = nil
	}
	if w.closer != nil {
		_ = w.closer.Close()
		w.closer = nil
	}
}

// produce publishes every event, in order.
func (r *run) produce() {
	if r.lg != nil {
		r.produceLog()
		return
	}
	for _, e := range r.s.Events {
		ev := event.OrderPaid{EventID: e.ID, OccurredAtMs: r.clock.NowMs(), OrderID: e.order(), UserID: e.User, AmountCents: e.Amount}
		payload := ev.Encode()
		off := r.b.Enqueue(Topic, "", e.ID, payload, broker.Produced)
		r.offsets = append(r.offsets, off)
		if readBack(ev) {
			r.produced = append(r.produced, producedEvent{payload, ev})
		}
		r.tracef(Entry{Kind: KindProduce, Event: e.ID}, "produce %s: user %s, %d cents%s (offset %d)", e.ID, e.User, e.Amount, poisonNote(e), off)
	}
}

// producedEvent is an event produce published and its payload.
type producedEvent struct {
	payload []byte
	ev      event.OrderPaid
}

// readBack reports whether ev's payload decodes to ev: its strings are
// valid UTF-8, which JSON carries unchanged (it replaces invalid bytes).
func readBack(ev event.OrderPaid) bool {
	return utf8.ValidString(ev.EventID) && utf8.ValidString(ev.Tenant) && utf8.ValidString(ev.OrderID) && utf8.ValidString(ev.UserID)
}

// decode is event.DecodeOrderPaid, but for the payloads the run produced
// (a duplicate or a replay carries them too), which it knows already.
func (r *run) decode(payload []byte) (event.OrderPaid, error) {
	for _, p := range r.produced {
		if bytes.Equal(p.payload, payload) {
			return p.ev, nil
		}
	}
	return event.DecodeOrderPaid(payload)
}

func poisonNote(e Event) string {
	s := ""
	if e.Poison {
		s = ", poison"
	}
	if e.Payload != "" {
		s += ", the payload of " + e.Payload + " again"
	}
	return s
}

func (r *run) now() int64 { return r.clock.NowMs() - startMs }

// wait waits for the event of the worker that runs.
func (r *run) wait(w *worker) (wevent, bool) {
	r.waiting.Store(true)
	r.g.enter(phaseWaiting)
	r.dog.Reset(r.hangAfter)
	defer func() {
		r.dog.Stop()
		r.waiting.Store(false)
		r.g.enter(phaseScheduling)
	}()
	for {
		select {
		case ev := <-r.events:
			r.progress.Add(1)
			return ev, true
		case <-r.dog.C:
			r.fail("handler-hangs", fmt.Sprintf("%s ran for %s without reaching a database call, a handler.Point or its return%s: it blocks outside the harness's control", w.name, r.hangAfter, afterNote(w.at)))
			return wevent{}, false
		case <-r.bgKick:
			// A goroutine other than a handler's made a call while w
			// runs: w may be waiting for it (a library's mutex held
			// across the call). Once the bubble is settled, w's own
			// event comes first; otherwise the goroutine moves.
			if !r.bubble {
				continue
			}
			synctest.Wait()
			select {
			case ev := <-r.events:
				r.progress.Add(1)
				return ev, true
			default:
			}
			r.serveBackground()
		}
	}
}

// afterNote says where a worker last was, for a report.
func afterNote(p point) string {
	if s := p.String(); s != "" {
		return " (after " + s + ")"
	}
	return ""
}

// advance moves the scenario's time by d ms; in a testing/synctest bubble
// the handler's time.Now moves with it (every other goroutine of the
// bubble is parked, so the sleep ends at once).
func (r *run) advance(d int64) {
	r.clock.Advance(d)
	if r.bubble {
		time.Sleep(time.Duration(d) * time.Millisecond)
	}
	r.b.Tick()
	r.tracef(Entry{Kind: KindTime}, "time moves %dms to t=%dms", d, r.now())
	if !r.bubble {
		r.busyTimeouts()
	}
	if r.bubble {
		// What the time woke (a context's deadline, a library's ticker)
		// has run to where it waits again.
		synctest.Wait()
		r.collectWoken()
		r.busyTimeouts()
		r.serveBackground()
	}
}

// busyTimeouts ends the waits that time moved past their busy timeout:
// the engine gives up there and the call answers busy, whatever the holder
// of the lock does next. A wait with no timeout the engine sets (an
// in-engine wait SQLite makes with busy_timeout) lasts until the lock is
// released.
func (r *run) busyTimeouts() {
	for _, w := range r.workers {
		if w.state != blocked || !w.at.call.InEngine || w.at.call.Timeout <= 0 {
			continue
		}
		waited := r.now() - w.waitFrom
		if waited < w.at.call.Timeout.Milliseconds() {
			continue
		}
		call := w.at
		r.tracef(w.callEntry(KindLockGiveUp, call), "%s gives up waiting at %s after its busy timeout (%dms): the call answers busy", w.name, call, w.at.call.Timeout.Milliseconds())
		if by := r.lockHolders(w); by != "" {
			// The lock is held across the time the scenario moved: a
			// slow transaction, which the consumer meets as a busy error.
			r.fault(w, FaultLockTimeout, call.String())
		}
		r.reach(situation.ConsumerLockWaitGivenUp)
		r.active.Store(w)
		w.resume <- giveUp
		r.await(w)
	}
}

// reach counts a situation of the coverage table.
func (r *run) reach(situation string) {
	if r.situations == nil {
		r.situations = map[string]int{}
	}
	r.situations[situation]++
}

// fail stops the run with a breach of law "runs".
func (r *run) fail(what, detail string) {
	if r.failure == nil {
		b := breach(LawRuns, what, detail)
		r.failure = &b
	}
}

// resume lets w go with d and handles where it stops next.
func (r *run) resume(w *worker, d decision) {
	r.active.Store(w)
	w.resume <- d
	r.await(w)
}

// await handles the next event from w.
func (r *run) await(w *worker) {
	if ev, ok := r.wait(w); ok {
		r.handle(w, ev)
	}
}

// handle records where w stopped.
func (r *run) handle(w *worker, ev wevent) {
	r.moves++
	r.flushConflicts(w)
	if ev.w != w {
		r.fail("harness", fmt.Sprintf("%s made a call while %s was running", ev.w.name, w.name))
		return
	}
	switch ev.kind {
	case evParked:
		w.state, w.at = parked, ev.p
		if ev.p.settle {
			r.answered(w, ev.p.result)
			if open, last := w.conn.InTx(); open {
				r.fail("handler-leaks-transaction", fmt.Sprintf("%s: the handler returned with a transaction still open (last call: %s)", w.name, last))
			}
		}
	case evBlocked:
		w.state, w.at, w.waitFrom = blocked, ev.p, r.now()
		r.tracef(w.callEntry(KindLockWait, ev.p), "%s waits for a lock at %s", w.name, ev.p)
		r.reach(situation.ConsumerLockWait)
	case evDone:
		w.state, w.at = idle, point{}
	case evStarted:
		r.started(w, ev)
	case evPanic:
		if ev.hung != "" {
			r.fail("handler-hangs", fmt.Sprintf("%s hung handling %s%s: %s", w.name, w.ev.EventID, afterNote(w.at), ev.hung))
			return
		}
		if w.starting {
			r.fail("worker-panics", fmt.Sprintf("%s: the Worker factory panicked: %s", w.name, ev.panic))
			return
		}
		r.fail("handler-panics", fmt.Sprintf("%s: the handler panicked handling %s: %s", w.name, w.ev.EventID, ev.panic))
	case evExited:
		if w.starting {
			r.fail("worker-exits", fmt.Sprintf("%s: the Worker factory's goroutine exited (runtime.Goexit)", w.name))
			return
		}
		r.fail("handler-exits", fmt.Sprintf("%s: the handler's goroutine exited (runtime.Goexit) handling %s", w.name, w.ev.EventID))
	}
}

// deliver hands w the pick-th eligible message, if any, and runs it to its
// first call.
func (r *run) deliver(w *worker, pick int) bool {
	d, ok := r.b.Deliver(Group, pick)
	if !ok {
		return false
	}
	ev, err := r.decode(d.Message.Payload)
	if err != nil { // the harness produced it
		r.fail("broker", err.Error())
		return true
	}
	w.d, w.ev = d, ev
	if d.Message.LastError == "ack_timeout" {
		r.timedOut(d.Message.Offset)
	}
	w.rec, w.nrec = len(r.deliveries), 1
	r.deliveries = append(r.deliveries, Delivery{Worker: w.name, Event: ev.EventID, Offset: d.Message.Offset, Origin: string(d.Message.Origin),
		Attempt: d.Message.Attempts, AtMs: r.now(), AfterReplay: r.replayed})
	m := handler.Message{EventID: ev.EventID, Event: ev, Topic: d.Message.Topic, Group: d.Message.Group,
		Tenant: d.Message.Tenant, IdempotencyKey: d.Message.Key, Attempts: d.Message.Attempts, LastError: d.Message.LastError}
	r.tracef(deliveryEntry(w, d), "t=%dms %s receives %s (offset %d, %s, attempt %d%s)", r.now(), w.name, ev.EventID, d.Message.Offset, d.Message.Origin, d.Message.Attempts, lastErrNote(d.Message.LastError))
	switch {
	case d.Message.LastError == "ack_timeout":
		r.reach(situation.RedeliveryAfterAckTimeout)
	case d.Message.Attempts > 1:
		r.reach(situation.RedeliveryAfterNack)
	}
	if d.Message.Origin == broker.Duplicated {
		r.reach(situation.ConsumerDuplicate)
	}
	// The delivery's context ends once the handler returned, or its
	// worker crashed (a process that died takes its contexts with it):
	// database/sql's watchers of what the handler left end with it.
	base, cancel := context.WithCancel(handler.WithDatabase(context.Background(), r.dbName))
	if w.pgx != nil {
		base = context.WithValue(base, pgxPoolKey{}, w.pgx.pool)
	}
	w.cancel = cancel
	ctx := handler.WithPoint(base, func(what string) {
		if w.crashing.Load() {
			return
		}
		if what == "" {
			what = "(unnamed)" // a handler.Point with no name: "call " alone reads as cut off
		}
		if w.park(wevent{kind: evParked, p: point{what: "call " + what}}) == crash {
			runtime.Goexit()
		}
	})
	r.active.Store(w)
	w.jobs <- job{ctx: ctx, m: m}
	r.await(w)
	return true
}

func lastErrNote(s string) string {
	if s == "" {
		return ""
	}
	return ", last error " + quoteShort(s)
}

func quoteShort(s string) string {
	return fmt.Sprintf("%q", shorten(s, 60))
}

// act makes w's parked call (or settles its delivery) and runs it on.
func (r *run) act(w *worker, d decision) {
	p := w.at
	if p.settle {
		r.settle(w, p)
		r.resume(w, proceed)
		return
	}
	if p.commit != nil && d != fail {
		r.actCommit(w, p)
		r.resume(w, d)
		return
	}
	if d == fail {
		r.fault(w, FaultInjected, p.String())
		r.tracef(w.callEntry(KindInjected, p), "%s %s -> injected failure", w.name, p)
		r.reach(situation.ConsumerInjectedFailure)
	} else {
		r.traceCall(p, r.tracef(w.callEntry(pointKind(p), p), "%s %s", w.name, p))
	}
	r.resume(w, d)
}

// traceCall makes line idx the one that shows what the call at p returns
// (see results.go). The end of a query's rows shows nothing: its query's
// line shows the rows.
func (r *run) traceCall(p point, idx int) {
	if p.what != "" || p.settle || p.call.Op == sqlhook.RowsEnd {
		return
	}
	r.trace.bindResult(p.call.Seq, idx)
	if r.effects == nil {
		r.effects = effectTables(r.c.Effects.Query)
		if r.effects == nil {
			r.effects = map[string]bool{}
		}
	}
	if writesEffectsOf(r.c.Effects.Query, p.call, r.effects) {
		r.trace.markEffect(idx, p.call.InTx)
	}
}

// settle applies w's answer to the broker.
func (r *run) settle(w *worker, p point) {
	if r.lg != nil {
		r.settleLog(w, p)
		return
	}
	r.endDelivery(w)
	r.deliveries[w.rec].Settled = true
	switch {
	case p.result == nil:
		r.b.Ack(w.d)
		r.tracef(w.entry(KindAck), "%s acks %s", w.name, w.ev.EventID)
	case handler.IsPoison(p.result):
		r.b.DeadLetter(w.d, p.result.Error())
		r.b.Ack(w.d)
		r.tracef(w.entry(KindDeadLetter), "%s dead-letters %s as poison: %s", w.name, w.ev.EventID, quoteShort(p.result.Error()))
		r.reach(situation.ConsumerDeadLetterPoison)
	default:
		r.b.Nack(w.d, p.result.Error())
		r.reach(situation.ConsumerNack)
		r.tracef(w.entry(KindNack), "%s nacks %s: %s", w.name, w.ev.EventID, quoteShort(p.result.Error()))
	}
}

// endDelivery ends the context of w's delivery.
func (r *run) endDelivery(w *worker) {
	if w.cancel != nil {
		w.cancel()
		w.cancel = nil
	}
}

// othersCanMove reports whether a worker other than w is parked at a call.
func (r *run) othersCanMove(w *worker) bool { return r.othersIn(w, parked) }

// othersBlocked reports whether a worker other than w, or a goroutine
// other than the handlers', waits for a lock.
func (r *run) othersBlocked(w *worker) bool { return r.backgroundBlocked() || r.othersIn(w, blocked) }

// othersIn reports whether a worker other than w is in state st.
func (r *run) othersIn(w *worker, st wstate) bool {
	return slices.ContainsFunc(r.workers, func(o *worker) bool { return o != w && o.state == st })
}

// selfWait reports whether a blocked worker waits for a lock outside the
// transaction it holds on another of its own connections: a deadlock of
// the handler's making, whoever else waits behind it.
func (r *run) selfWait() bool {
	for _, o := range r.workers {
		if o.state != blocked || o.at.call.InTx {
			continue
		}
		if open, _ := o.conn.InTx(); open {
			return true
		}
	}
	return false
}

// retry lets blocked w try its call again; if it meets the lock again and
// no other worker can move to release it, w gives up and its call returns
// the busy error (as a lock timeout would).
func (r *run) retry(w *worker) {
	call := w.at
	r.active.Store(w)
	w.resume <- retry
	ev, ok := r.wait(w)
	if !ok {
		return
	}
	if ev.w == w && ev.kind == evBlocked && !r.othersCanMove(w) {
		deadlock := r.othersBlocked(w) && !r.selfWait()
		if dl, ok := r.db.(backend.Deadlocker); ok && deadlock {
			w.deadlocked = true
			r.tracef(w.callEntry(KindLockGiveUp, call), "%s gives up waiting at %s: a deadlock between workers, which the server would detect: %s", w.name, call, dl.DeadlockAnswer())
		} else {
			r.tracef(w.callEntry(KindLockGiveUp, call), "%s gives up waiting at %s: %s", w.name, call, quoteShort(ev.p.busy.Error()))
		}
		r.trace.unbindResult(call.call.Seq)
		if deadlock {
			// A deadlock between workers, which the interleaving made. With
			// every other worker idle (none holds a transaction), or with a
			// worker waiting outside the transaction it holds itself on
			// another of its connections, the lock is the handler's own: a
			// wait it made itself, not a fault of the harness.
			r.fault(w, FaultLockTimeout, call.String())
		}
		r.reach(situation.ConsumerLockWaitGivenUp)
		w.resume <- giveUp
		r.await(w)
		if w.deadlocked {
			// The hook never read it (the worker crashed on the way).
			w.deadlocked = false
		} else if _, ok := r.db.(backend.Deadlocker); ok && deadlock {
			r.grantWaiters(w)
		}
		return
	}
	if ev.w == w && ev.kind == evBlocked {
		w.state, w.at = blocked, ev.p
		r.tracef(w.callEntry(KindLockWait, ev.p), "%s still waits for a lock at %s", w.name, ev.p)
		return
	}
	r.traceCall(call, r.tracef(w.callEntry(KindLockAcquired, call), "%s gets the lock at %s", w.name, call))
	r.handle(w, ev)
}

// grantWaiters retries, in the workers' order, every worker but v that
// waits for a lock, right after the server rolled v's transaction back
// in a deadlock, within the same step. InnoDB grants the locks a
// rollback releases to the connections queued for them, before the one
// rolled back can ask again: were v free to move first, a consumer that
// runs its transaction again on 1213 could take the same locks back and
// meet the same deadlock at every turn, a livelock no server makes, and
// which left a schedule of Verify looping until its step bound. A
// worker that waits for somebody else's lock waits on: v, parked again
// at its next call, can move, so such a retry gives no wait up.
func (r *run) grantWaiters(v *worker) {
	for _, o := range r.workers {
		if o != v && o.state == blocked {
			r.retry(o)
		}
	}
}

// crash stops w where it is: its goroutine never returns into the
// handler, its connections close, its delivery stays unacked, and it
// restarts idle.
func (r *run) crash(w *worker) {
	if w.state == running || w.state == down {
		// Moving on its own (its context ended), or down already: it
		// crashes once it parks again, if the schedule says so then.
		return
	}
	if w.state == idle {
		r.tracef(Entry{Kind: KindCrash, Worker: w.name}, "%s crashes while idle and restarts", w.name)
		r.reach(situation.ConsumerCrashWhileIdle)
	} else {
		r.reach(w.at.situation())
		r.fault(w, FaultCrash, w.at.String())
		r.tracef(w.callEntry(KindCrash, w.at), "%s crashes at %s (handling %s): connections closed, delivery not acked; it restarts", w.name, w.at, w.ev.EventID)
		w.crashing.Store(true)
		w.conn.Kill()
		r.crashBackground(w)
		r.active.Store(w)
		w.resume <- crash
		ev, ok := r.wait(w)
		if !ok {
			return
		}
		if ev.kind == evPanic {
			r.fail("handler-panics", fmt.Sprintf("%s: a deferred call of the handler panicked while it crashed: %s", w.name, ev.panic))
			return
		}
	}
	w.conn.Kill()
	r.crashBackground(w)
	r.stop(w, false)
	w.restarted = true
	if err := r.start(w); err != nil && w.state != down && r.failure == nil {
		r.fail("worker-restarts", err.Error())
	}
	r.serveBackground()
}

// step plays one step of the schedule.
func (r *run) step(st Step) {
	r.trace.steps++
	switch st.Op {
	case OpRun, OpFail:
		w := r.workers[st.Worker-1]
		switch w.state {
		case idle:
			if r.lg != nil {
				if !r.logFetch(w, st.Pick) {
					r.tracef(Entry{Kind: KindIdle, Worker: w.name}, "%s finds nothing to fetch", w.name)
				}
			} else if !r.deliver(w, st.Pick) {
				r.tracef(Entry{Kind: KindIdle, Worker: w.name}, "%s finds nothing to receive", w.name)
			}
		case blocked:
			r.retry(w)
		case parked:
			d := proceed
			if st.Op == OpFail && w.at.injectable() {
				d = fail
			}
			r.act(w, d)
		case running:
			r.tracef(Entry{Kind: KindIdle, Worker: w.name}, "%s is moving on its own", w.name)
		case down:
			r.restartDown(w)
		}
		r.serveBackground()
	case OpCrash:
		r.crash(r.workers[st.Worker-1])
	case OpAdvance:
		r.advance(st.Ms)
	case OpDuplicate:
		offs, err := r.b.Duplicate(Topic, r.offsets[st.Pick], 1)
		if err == nil {
			r.tracef(Entry{Kind: KindDuplicate, Event: r.s.Events[st.Pick].ID}, "the broker duplicates %s (offset %d)", r.s.Events[st.Pick].ID, offs[0])
		}
	case OpReplay:
		if r.lg != nil {
			r.replayLog()
			return
		}
		offs := r.b.Replay(Topic)
		r.tracef(Entry{Kind: KindReplay}, "the broker replays the stream (%d messages)", len(offs))
	case OpRebalance:
		if r.lg != nil {
			r.rebalanceLog(st)
		}
	}
}

// drain drives the system with a fixed schedule until nothing is pending:
// round robin over the workers that can move (a parked worker makes its
// call, an idle worker receives the first eligible message), a waiting
// worker retried only when no other can move, time moved to the broker's
// next deadline when nobody can.
func (r *run) drain() {
	for r.failure == nil {
		r.actions++
		if r.actions > maxActions {
			r.fail(law.Quiesces, fmt.Sprintf("the system did not quiesce within %d calls: a handler loops", maxActions))
			return
		}
		eligible := -1 // unknown: asked of the broker only when an idle worker needs it
		moves := r.roundRobin(func(w *worker) bool {
			switch w.state {
			case parked:
				r.act(w, proceed)
				return true
			case idle:
				if r.lg != nil {
					return r.logCanMove(w) && r.logFetch(w, 0)
				}
				if eligible < 0 {
					eligible = len(r.b.Eligible(Group)) // ticks the ack timeouts first
				}
				if eligible > 0 {
					r.deliver(w, 0)
					return true
				}
			}
			return false
		}) || r.roundRobin(func(w *worker) bool {
			if w.state != blocked {
				return false
			}
			r.retry(w)
			return true
		}) || r.unblockBackground() || r.roundRobin(func(w *worker) bool {
			if w.state != down {
				return false
			}
			r.restartDown(w)
			return true
		})
		if moves {
			r.serveBackground()
			continue
		}
		quiet, next := r.b.Quiet()
		if r.lg != nil {
			quiet, next = r.quietLog()
			next += startMs
		}
		if quiet {
			return
		}
		d := max(next-r.clock.NowMs(), 1)
		r.advance(d)
	}
}

// roundRobin offers move the workers in turn, starting after the last
// one that moved, until it takes one (returns true), and reports whether
// one was taken.
func (r *run) roundRobin(move func(w *worker) bool) bool {
	n := len(r.workers)
	for k := 1; k <= n; k++ {
		if i := (r.cursor + k) % n; move(r.workers[i]) {
			r.cursor = i
			return true
		}
	}
	return false
}

// close stops every worker and drops the database, then looks for
// goroutines the handler left running.
func (r *run) close() {
	if r.closed {
		return
	}
	r.closed = true
	r.g.enter(phaseClosing)
	// From here on, goroutines other than a handler's run unscheduled: a
	// library's Close may wait for its own goroutine's last call.
	r.free.Store(true)
	r.releaseBackground()
	for _, w := range r.workers {
		if w.state != idle && w.state != down {
			w.crashing.Store(true)
			w.conn.Kill()
			r.active.Store(w)
			select {
			case w.resume <- crash:
				r.wait(w)
			case <-time.After(time.Second):
			}
		}
		r.stop(w, true)
	}
	r.db.Close()
	done := make(chan struct{})
	go func() { r.loops.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(time.Second):
		return // a worker is hung: already reported
	}
	if r.bubble || r.c.Lingering != "" {
		// In a bubble, goroutines left blocked make the bubble panic as
		// it ends, and playScenario reads who they are then (see
		// leakBreach); the profile is read only when some are left.
		return
	}
	// Outside a bubble, goroutines of the harness and of database/sql may
	// still be on their way out: look only past a slack.
	if runtime.NumGoroutine() <= r.baseG+leakSlack {
		return
	}
	n, origin, stack := leaked(r.id)
	for try := 0; n > 0 && try < 3; try++ {
		// A goroutine on its way out may not be gone yet.
		time.Sleep(time.Millisecond)
		n, origin, stack = leaked(r.id)
	}
	if n > 0 && r.failure == nil {
		b := leakBreach(n, origin, stack)
		r.failure = &b
	}
}
