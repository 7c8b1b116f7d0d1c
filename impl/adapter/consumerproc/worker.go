package consumerproc

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"os"

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
}

func (o Options) withDefaults() Options {
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.StartTimeout <= 0 {
		o.StartTimeout = DefaultStartTimeout
	}
	return o
}

// ParseCommand splits a command line on white space: "node consumer.js" is
// argv ["node", "consumer.js"]. There is no quoting; wrap anything fancier
// in a script.
func ParseCommand(line string) ([]string, error) {
	argv := strings.Fields(line)
	if len(argv) == 0 {
		return nil, errors.New("consumerproc: empty command")
	}
	return argv, nil
}

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
}

// Error implements error.
func (e *Error) Error() string {
	return fmt.Sprintf("consumerproc: consumer %q (worker %s) failed on %s: %s; the process was killed and this worker is unusable",
		e.Command, e.Worker, e.Request, e.Reason)
}

// Worker returns a handler.Worker that runs command as the team's consumer,
// one process per worker; the Closer kills it. command[0] is looked up in
// PATH. Each call starts its process and checks the protocol version it
// speaks, so that a command that cannot start is an error of the Worker
// call, and the start (slow on a loaded machine) is not counted as the
// handler's time.
//
// A failure of a process (it hung, died, answered garbage) is not an
// outcome of the team's handler and must not be taken for one (nacked,
// redelivered, and the run judged as if nothing happened): the Func panics
// with the *Error, which the harness reports as a run that could not be
// judged, and every later call of the Worker returns an error wrapping it,
// which stops the campaign.
func Worker(command []string, opts Options) handler.Worker {
	opts = opts.withDefaults()
	argv := append([]string(nil), command...)
	sh := &shared{}
	return func(id string) (handler.Func, io.Closer, error) {
		w := &worker{argv: argv, command: strings.Join(argv, " "), id: id, opts: opts, sh: sh}
		if len(argv) == 0 {
			return nil, nil, &Error{Command: w.command, Worker: id, Request: "start", Reason: "no command"}
		}
		sh.mu.Lock()
		failed := sh.failed
		sh.mu.Unlock()
		if failed != nil {
			return nil, nil, fmt.Errorf("consumerproc: not starting %q again after an earlier process failed: %w", w.command, failed)
		}
		if err := w.start(); err != nil {
			return nil, nil, err
		}
		return w.handle, w, nil
	}
}

// shared is what the workers of one Worker know together.
type shared struct {
	mu     sync.Mutex
	failed error // the first failure of a process, for good
}

// worker is one process serving one worker of the harness.
type worker struct {
	argv    []string
	command string
	id      string
	opts    Options
	sh      *shared

	mu       sync.Mutex // guards what follows; never held across a call
	p        *lineproc.Proc
	killed   bool
	isClosed bool    // Close was called
	hello    request // the process's hello
	broken   error   // set for good by a failure of the process or Close
	delivery int64
}

// Declaration is what a process may declare about itself in its hello, so
// that a command line alone puts it under the harness (fuzzrun -consumer
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
}

// Declare starts command once, performs the handshake, and returns what
// the process declared in its hello; the process is killed after. A
// process that cannot start, hangs, dies or speaks another version is an
// *Error, as in Worker.
func Declare(command []string, opts Options) (Declaration, error) {
	opts = opts.withDefaults()
	w := &worker{argv: command, command: strings.Join(command, " "), id: "declare", opts: opts, sh: &shared{}}
	if len(command) == 0 {
		return Declaration{}, &Error{Command: w.command, Worker: w.id, Request: "start", Reason: "no command"}
	}
	defer w.Close()
	if err := w.start(); err != nil {
		return Declaration{}, err
	}
	h := w.hello
	return Declaration{Schema: h.Schema, Effects: h.Effects, Aggregate: h.Aggregate, Dedupe: h.Dedupe}, nil
}

// start launches the process and performs the handshake.
func (w *worker) start() error {
	env := append(append(os.Environ(), w.opts.Env...), WorkerEnv+"="+w.id)
	const what = "hello (the handshake, protocol version 1)"
	var p *lineproc.Proc
	var err error
	// Started from outside any bubble, so are its reader and its waiter.
	outside(func() { p, err = lineproc.Start(w.argv, w.opts.Dir, env) })
	if err != nil {
		return w.fail(0, what, fmt.Errorf("could not start: %w", err))
	}
	w.mu.Lock()
	w.p = p
	if w.killed { // closed meanwhile
		w.mu.Unlock()
		<-goOutside(p.Kill)
		return w.broken
	}
	w.mu.Unlock()
	line := marshal(map[string]any{"type": TypeHello, "protocol": Version, "worker": w.id})
	ans, err := w.roundTripWithin(context.Background(), line, 0, what, w.opts.StartTimeout)
	if err != nil {
		return err
	}
	h, err := parse(ans, 0)
	if err != nil {
		return w.fail(0, what, w.withStderr(err))
	}
	w.hello = h
	return nil
}

// reasonClosed is the Reason of the error a closed worker answers.
const reasonClosed = "the worker was closed"

// Close implements io.Closer: it kills the process (a crash of the worker,
// or the end of the run). Safe to call while a delivery is in flight.
func (w *worker) Close() error {
	w.mu.Lock()
	w.isClosed = true
	if w.broken == nil {
		w.broken = &Error{Command: w.command, Worker: w.id, Request: "a delivery after Close", Reason: reasonClosed}
	}
	w.mu.Unlock()
	w.kill()
	return nil
}

func (w *worker) kill() {
	w.mu.Lock()
	p, done := w.p, w.killed
	w.killed = true
	w.mu.Unlock()
	if p != nil && !done {
		<-goOutside(p.Kill)
	}
}

// fail kills the process and makes the worker unusable with an *Error.
func (w *worker) fail(delivery int64, what string, reason error) error {
	e := &Error{Command: w.command, Worker: w.id, Delivery: delivery, Request: what, Reason: reason.Error()}
	w.mu.Lock()
	if w.broken == nil {
		w.broken = e
	}
	w.mu.Unlock()
	w.sh.mu.Lock()
	if w.sh.failed == nil {
		w.sh.failed = e
	}
	w.sh.mu.Unlock()
	w.kill()
	return e
}

// withStderr adds the tail of the process's stderr to err: a process that
// hangs or prints garbage often says why there.
func (w *worker) withStderr(err error) error {
	w.mu.Lock()
	p := w.p
	w.mu.Unlock()
	if p == nil {
		return err
	}
	if e := p.Stderr(); e != "" {
		return fmt.Errorf("%w; its stderr ends with: %s", err, e)
	}
	return err
}

// roundTrip sends one line and reads the process's next line.
func (w *worker) roundTrip(ctx context.Context, line []byte, delivery int64, what string) ([]byte, error) {
	return w.roundTripWithin(ctx, line, delivery, what, w.opts.Timeout)
}

func (w *worker) roundTripWithin(ctx context.Context, line []byte, delivery int64, what string, timeout time.Duration) ([]byte, error) {
	w.mu.Lock()
	p := w.p
	w.mu.Unlock()
	// The round trip and its timeout run outside any bubble, on the
	// machine's clock; the caller waits for it (or for its context).
	var ans []byte
	var err error
	done := goOutside(func() { ans, err = p.RoundTrip(context.Background(), line, timeout) })
	select {
	case <-done:
	case <-ctx.Done():
		w.kill()
		<-done
		return nil, fmt.Errorf("consumerproc: consumer %q (worker %s), %s: gave up waiting: %w", w.command, w.id, what, ctx.Err())
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
	var death lineproc.DeathError
	if !errors.As(err, &death) {
		err = w.withStderr(err)
	}
	return nil, w.fail(delivery, what, err)
}

// handle is the handler.Func: one delivery, carried out by the process. A
// failure of the process panics with its *Error (see Worker).
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
	line := marshal(map[string]any{"type": TypeDeliver, "delivery": d, "nowMs": time.Now().UnixMilli(), "message": toWire(m)})
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
