package consumerproc

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"time"

	"github.com/idemcheck/idemcheck/impl/adapter/internal/lineproc"
	"github.com/idemcheck/idemcheck/impl/contract/handler"
)

// DefaultTimeout bounds the wait for each line of the process unless
// Options.Timeout is set.
const DefaultTimeout = 5 * time.Second

// DefaultStartTimeout bounds the wait for a new process's hello unless
// Options.StartTimeout is set: starting a runtime on a loaded machine can
// take seconds.
const DefaultStartTimeout = 30 * time.Second

// WorkerEnv names the environment variable that tells the process which
// worker it serves.
const WorkerEnv = "IDEMCHECK_WORKER"

// Options configure the team's process.
type Options struct {
	// Dir is the process's working directory; empty: the harness's.
	Dir string
	// Env is added to the harness's environment.
	Env []string
	// Timeout bounds the wait for each line of the process; zero means
	// DefaultTimeout. The time the harness spends running a statement (or
	// holding the worker at a scheduling point) does not count.
	Timeout time.Duration
	// StartTimeout bounds the wait for the hello of a new process; zero
	// means DefaultStartTimeout.
	StartTimeout time.Duration
	// MaxIdle bounds the started processes a Pool keeps waiting for a
	// worker: processes that declared reset, back from their worker, and
	// spares started ahead for processes that did not. Zero means
	// DefaultMaxIdle; a negative value keeps none, so that every worker
	// gets a process started for it and killed when it stops.
	MaxIdle int
}

// DefaultMaxIdle is the MaxIdle of Options that give none: room for the
// three workers a scenario has at most, and a spare.
const DefaultMaxIdle = 4

func (o Options) withDefaults() Options {
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.StartTimeout <= 0 {
		o.StartTimeout = DefaultStartTimeout
	}
	if o.MaxIdle == 0 {
		o.MaxIdle = DefaultMaxIdle
	}
	return o
}

// ParseCommand splits a command line on white space: "node consumer.js" is
// argv ["node", "consumer.js"]. There is no quoting; wrap anything fancier
// in a script.
func ParseCommand(line string) ([]string, error) { return lineproc.Argv("consumerproc", line) }

// Error is a failure of the team's process itself, as opposed to an
// outcome of its handler: it could not start, hung, died, answered garbage
// or spoke another protocol version.
type Error struct {
	// Command is the process's command line and Worker the worker it
	// served.
	Command string
	Worker  string
	// Delivery numbers the worker's deliveries from 1; 0 is the handshake.
	Delivery int64
	// Request names what the harness sent and was waiting on an answer
	// to, for example `request 3 of delivery 2: exec "INSERT ..."`.
	Request string
	// Reason says what happened.
	Reason string
	// Hung marks a process that stopped answering in the middle of a
	// delivery (its handler hangs): an outcome of the team's handler,
	// which the harness judges (law runs), not a failure of the harness.
	// Only this worker is unusable; the pool starts processes again.
	Hung bool
}

// HandlerHung reports whether the process hung in the middle of a
// delivery (see Hung): the harness reports the team's handler as hanging.
func (e *Error) HandlerHung() bool { return e.Hung }

// Error implements error.
func (e *Error) Error() string {
	if e.Hung {
		return fmt.Sprintf("consumerproc: consumer %q (worker %s) hung on %s: %s; the process was killed",
			e.Command, e.Worker, e.Request, e.Reason)
	}
	return fmt.Sprintf("consumerproc: consumer %q (worker %s) failed on %s: %s; the process was killed and this worker is unusable",
		e.Command, e.Worker, e.Request, e.Reason)
}

// Worker returns a handler.Worker that runs command as the team's consumer,
// one process per worker at a time, from a Pool of its own (see NewPool):
// a process that declares reset serves worker after worker, reset in
// between; one that does not is started for its worker and killed when
// the worker stops, with a spare started ahead for the next worker of the
// same name. The pool cannot be closed from here: its idle processes are
// killed once idle for a few seconds, or when the harness exits (their
// stdin closes). A caller that can close it uses NewPool.
//
// command[0] is looked up in PATH. A failure of a process (it could not
// start, hung, died, answered garbage) is not an outcome of the team's
// handler and must not be taken for one (nacked, redelivered, and the run
// judged as if nothing happened): the Func panics with the *Error, which
// the harness reports as a run that could not be judged, and every later
// call of the Worker returns an error wrapping it, which stops the
// campaign. A process that hangs in the middle of a delivery is its
// handler hanging: the Func panics with an *Error whose HandlerHung is
// true (law runs, handler-hangs), and later calls start processes again.
func Worker(command []string, opts Options) handler.Worker {
	return NewPool(command, opts).Worker
}

// worker is one process serving one worker of the harness, from the call
// of the Worker to the Closer.
type worker struct {
	pool    *Pool
	id      string
	version int // the protocol version its process speaks

	mu       sync.Mutex // guards what follows; never held across a call
	pr       *proc      // nil once the process went back to the pool or was killed
	tripping bool       // a line was sent and its answer is awaited
	isClosed bool       // Close was called
	broken   error      // set for good by a failure of the process or Close
	delivery int64
}

// Declaration is what a process may declare about itself in its hello, so
// that a command line alone puts it under the harness (fuzzrun consumer
// exec:COMMAND). A Go test gives the same in its consumertest.Consumer.
type Declaration struct {
	// Schema is SQL run on the fresh database of every scenario.
	Schema string
	// Effects reads what the consumer did: one row per applied event (the
	// event id first), or, when Aggregate, rows of (user id, total cents).
	Effects   string
	Aggregate bool
	// Dedupe, optional, reads the consumer's dedupe records (the event id
	// first), for the atomicity check.
	Dedupe string
	// Resets reports that the process declared reset (protocol version
	// 2): a Pool reuses it from worker to worker.
	Resets bool
}

func declaration(h request) Declaration {
	return Declaration{Schema: h.Schema, Effects: h.Effects, Aggregate: h.Aggregate, Dedupe: h.Dedupe, Resets: h.Reset}
}

// Declare starts command once, performs the handshake, and returns what
// the process declared in its hello; the process is killed after. A
// process that cannot start, hangs, dies or speaks another version is an
// *Error, as in Worker. Pool.Declare does the same and keeps the process.
func Declare(command []string, opts Options) (Declaration, error) {
	pl := NewPool(command, Options{Dir: opts.Dir, Env: opts.Env, Timeout: opts.Timeout, StartTimeout: opts.StartTimeout, MaxIdle: -1})
	defer pl.Close()
	return pl.Declare()
}

// reasonClosed is the Reason of the error a closed worker answers.
const reasonClosed = "the worker was closed"

// reset hands the process to this worker: a process that declared reset
// forgets everything it kept and learns the worker's name.
func (w *worker) reset() error {
	what := fmt.Sprintf("reset (for worker %s)", w.id)
	ans, err := w.roundTripWithin(context.Background(), marshal(map[string]any{"type": TypeReset, "worker": w.id}), 0, what, w.pool.opts.Timeout)
	if err != nil {
		return err
	}
	if err := parseReset(ans); err != nil {
		return w.fail(0, what, w.withStderr(err))
	}
	return nil
}

// Close implements io.Closer: the worker stopped (a crash, or the end of
// a scenario). Its process goes back to the pool when it declared reset and
// waits for its next line; otherwise (or in the middle of a round trip) it
// is killed. Safe to call while a delivery is in flight.
var _ handler.FreshWorkers = (*worker)(nil)

// FreshWorker implements handler.FreshWorkers: a process that declared
// reset serves worker after worker, and one whose reset keeps something
// would make a verdict out of another scenario's state; the harness plays
// a counterexample again on processes that served no other worker.
func (w *worker) FreshWorker() handler.Worker { return w.pool.freshWorker() }

func (w *worker) Close() error {
	w.mu.Lock()
	if w.isClosed {
		w.mu.Unlock()
		return nil
	}
	w.isClosed = true
	if w.broken == nil {
		w.broken = &Error{Command: w.pool.command, Worker: w.id, Request: "a delivery after Close", Reason: reasonClosed}
	}
	pr, reusable := w.pr, !w.tripping
	w.pr = nil
	w.mu.Unlock()
	w.pool.release(w, pr, reusable)
	return nil
}

// abandon makes the worker unusable with err (unless it already is) and
// kills its process.
func (w *worker) abandon(err error) {
	w.mu.Lock()
	if w.broken == nil {
		w.broken = err
	}
	pr := w.pr
	w.pr = nil
	w.mu.Unlock()
	w.pool.release(w, pr, false)
}

// fail kills the process and makes the worker, and the pool, unusable
// with an *Error.
func (w *worker) fail(delivery int64, what string, reason error) error {
	e := &Error{Command: w.pool.command, Worker: w.id, Delivery: delivery, Request: what, Reason: reason.Error()}
	w.pool.failWith(e)
	w.abandon(e)
	return e
}

// withStderr adds the tail of the process's stderr to err: a process that
// hangs or prints garbage often says why there.
func (w *worker) withStderr(err error) error {
	w.mu.Lock()
	pr := w.pr
	w.mu.Unlock()
	if pr == nil {
		return err
	}
	return pr.p.WithStderr(err)
}

// roundTrip sends one line and reads the process's next line.
func (w *worker) roundTrip(ctx context.Context, line []byte, delivery int64, what string) ([]byte, error) {
	return w.roundTripWithin(ctx, line, delivery, what, w.pool.opts.Timeout)
}

func (w *worker) roundTripWithin(ctx context.Context, line []byte, delivery int64, what string, timeout time.Duration) ([]byte, error) {
	w.mu.Lock()
	if w.broken != nil {
		err := w.broken
		w.mu.Unlock()
		return nil, err
	}
	pr := w.pr
	w.tripping = true
	w.mu.Unlock()
	defer func() {
		w.mu.Lock()
		w.tripping = false
		w.mu.Unlock()
	}()
	// No timer of the caller's: it may be in a bubble, whose clock is not
	// the machine's. The process's watchdog, outside any bubble, kills a
	// process that does not answer within the timeout.
	ans, err := pr.p.Exchange(ctx, line, timeout)
	if ctx.Err() != nil && err != nil {
		// Not a failure of the process; but its answer is lost, so
		// the worker cannot go on.
		w.abandon(&Error{Command: w.pool.command, Worker: w.id, Delivery: delivery, Request: what, Reason: "the harness gave up waiting: " + ctx.Err().Error()})
		return nil, fmt.Errorf("consumerproc: consumer %q (worker %s), %s: gave up waiting: %w", w.pool.command, w.id, what, ctx.Err())
	}
	if err == nil {
		return ans, nil
	}
	w.mu.Lock()
	closed := w.broken
	w.mu.Unlock()
	if closed != nil {
		return nil, closed // killed by Close: not a failure of the process
	}
	err = w.withStderr(err)
	if delivery > 0 && errors.Is(err, lineproc.ErrHung) {
		return nil, w.hang(delivery, what, err)
	}
	return nil, w.fail(delivery, what, err)
}

// hang kills the process of a worker whose handler hung in the middle of
// a delivery and makes this worker unusable, but not the pool: a handler
// that hangs is the team's, as one in Go would be, and later workers get
// processes of their own.
func (w *worker) hang(delivery int64, what string, reason error) error {
	e := &Error{Command: w.pool.command, Worker: w.id, Delivery: delivery, Request: what, Reason: reason.Error(), Hung: true}
	w.abandon(e)
	return e
}

// handle is the handler.Func: one delivery, carried out by the process. A
// failure of the process panics with its *Error (see Worker), and so does
// a process that hangs mid-delivery, with an *Error whose HandlerHung
// says so: the harness reports the handler as hanging (law runs).
func (w *worker) handle(ctx context.Context, db *sql.DB, m handler.Message) error {
	err := w.deliver(ctx, db, m)
	var pe *Error
	if errors.As(err, &pe) && !w.closed() {
		panic(pe)
	}
	return err
}

// closed reports whether Close was called.
func (w *worker) closed() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.isClosed
}

// deliver carries out one delivery; a failure of the process is an *Error.
func (w *worker) deliver(ctx context.Context, db *sql.DB, m handler.Message) (err error) {
	w.mu.Lock()
	if w.broken != nil {
		err := w.broken
		w.mu.Unlock()
		return err
	}
	w.delivery++
	d := w.delivery
	w.mu.Unlock()

	var tx *sql.Tx
	defer func() {
		if tx != nil {
			// The process ended its delivery (or failed) with a
			// transaction open: nothing of it is committed.
			_ = tx.Rollback()
		}
	}()
	what := fmt.Sprintf("delivery %d (event %s, attempt %d)", d, m.EventID, m.Attempts)
	// The handler runs in the scenario's bubble: time.Now is the scenario's.
	deliver := map[string]any{"type": TypeDeliver, "delivery": d, "nowMs": time.Now().UnixMilli(), "message": toWire(m)}
	if name := databaseOf(ctx, db); name != "" && w.version >= 2 {
		deliver["database"] = name
	}
	line := marshal(deliver)
	for n := 1; ; n++ {
		ans, err := w.roundTrip(ctx, line, d, what)
		if err != nil {
			return err
		}
		r, err := parse(ans, d)
		if err != nil {
			return w.fail(d, what, w.withStderr(err))
		}
		what = fmt.Sprintf("request %d of delivery %d (event %s): %s", n, d, m.EventID, describe(r))
		var res map[string]any
		switch r.Type {
		case TypeDone:
			return outcome(r)
		case TypePoint:
			handler.Point(ctx, r.What)
			res = ok()
		case TypeBegin:
			if tx != nil {
				res = refuse(CodeBadRequest, "begin inside a transaction: commit or roll back the open one first")
				break
			}
			t, err := db.BeginTx(ctx, nil)
			if err != nil {
				res = dbError(err)
				break
			}
			tx, res = t, ok()
		case TypeCommit, TypeRollback:
			if tx == nil {
				res = refuse(CodeBadRequest, r.Type+" outside a transaction")
				break
			}
			var err error
			if r.Type == TypeCommit {
				err = tx.Commit()
			} else {
				err = tx.Rollback()
			}
			tx = nil // the transaction is over either way
			res = ok()
			if err != nil {
				res = dbError(err)
			}
		case TypeExec, TypeQuery:
			vals, err := args(r.Args)
			if err != nil {
				res = refuse(CodeBadRequest, err.Error())
				break
			}
			res = run(ctx, db, tx, r.Type, *r.SQL, vals)
		}
		res["delivery"] = d
		res["seq"] = n
		line = marshal(res)
	}
}

// databaseOf names the database of a delivery: as the harness says
// (handler.Database), or else as the driver of db tells.
func databaseOf(ctx context.Context, db *sql.DB) string {
	if name := handler.Database(ctx); name != "" {
		return name
	}
	t := reflect.TypeOf(db.Driver())
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil {
		return ""
	}
	switch path := t.PkgPath(); {
	case strings.Contains(path, "pgx"), strings.Contains(path, "lib/pq"):
		return "postgres"
	case strings.Contains(path, "sqlite"):
		return "sqlite"
	}
	return ""
}

// outcome turns a done request into the handler's answer.
func outcome(r request) error {
	switch r.Outcome {
	case OutcomeNack:
		if r.Error == "" {
			return errors.New("nack")
		}
		return errors.New(r.Error)
	case OutcomePoison:
		if r.Error == "" {
			return handler.Poison(nil)
		}
		return handler.Poison(errors.New(r.Error))
	}
	return nil
}

func ok() map[string]any { return map[string]any{"type": TypeResult, "ok": true} }

func refuse(code, msg string) map[string]any {
	return map[string]any{"type": TypeResult, "ok": false, "code": code, "error": msg}
}

func dbError(err error) map[string]any { return refuse(errorCode(err), err.Error()) }

// querier is what *sql.DB and *sql.Tx share.
type querier interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// run runs one statement, in tx when one is open.
func run(ctx context.Context, db *sql.DB, tx *sql.Tx, typ, query string, vals []any) map[string]any {
	var q querier = db
	if tx != nil {
		q = tx
	}
	if typ == TypeExec {
		res, err := q.ExecContext(ctx, query, vals...)
		if err != nil {
			return dbError(err)
		}
		out := ok()
		if n, err := res.RowsAffected(); err == nil {
			out["rowsAffected"] = n
		}
		return out
	}
	rows, err := q.QueryContext(ctx, query, vals...)
	if err != nil {
		return dbError(err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return dbError(err)
	}
	table := [][]any{}
	for rows.Next() {
		cells := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range cells {
			ptrs[i] = &cells[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return dbError(err)
		}
		for i := range cells {
			cells[i] = value(cells[i])
		}
		table = append(table, cells)
	}
	if err := rows.Err(); err != nil {
		return dbError(err)
	}
	out := ok()
	out["columns"] = cols
	out["rows"] = table
	return out
}
