// Package sqlhook is a wrapping database/sql driver: it sits between a
// team's code and the real driver and calls a Hook before every call that
// reaches the database (begin, exec, query, end of a row iteration, commit,
// rollback). The harness's scheduler is that hook: it parks the calling
// goroutine there, lets another worker run, injects a failure, or crashes
// the worker, while the team's code is unchanged.
//
// Lock waits are the hook's business too: the real driver is opened with no
// busy timeout, so a statement that meets a lock another connection holds
// answers "busy" at once; the wrapper then asks Hook.Busy, which parks the
// caller until the scheduler retries it or gives up (the busy error is then
// returned, as a lock timeout would be).
//
// A Connector owns every connection it opened. Kill closes them all under
// whatever they were doing — the database rolls open transactions back —
// and every later call on them fails, as on a process that died. A call in
// progress on the real driver when Kill comes (a goroutine of the team's
// that did not wait for the scheduler) finishes first: the connection is
// closed as soon as it returns, never under it.
//
// Contexts: the hook sees each call's context and its transaction's. A
// transaction whose context ended is rolled back at once on the real
// connection (what database/sql's watcher of the context does, made
// synchronous so that the schedule, not the Go scheduler, decides when),
// and its later Rollback, from the watcher or the caller, is no call at
// all. A row iteration whose context ended is closed the same way.
//
// A Rewriter, when given, changes each statement's text before it reaches
// the database (the harness points the database's clock at the
// scenario's: see internal/consumerharness/sqlclock) and adds notes to the Call; the Call
// keeps the statement as the caller wrote it.
package sqlhook

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Op names the kind of call.
type Op string

// The calls that are scheduling points.
const (
	Begin    Op = "begin"
	Exec     Op = "exec"
	Query    Op = "query"
	RowsEnd  Op = "rows end"
	Commit   Op = "commit"
	Rollback Op = "rollback"
)

// Call is one call about to reach the database.
type Call struct {
	Op Op
	// SQL is the statement text ("BEGIN", "COMMIT", "ROLLBACK" for the
	// transaction calls; the query for a rows end).
	SQL string
	// Args are the statement's arguments.
	Args []driver.NamedValue
	// InTx reports whether the connection is inside a transaction.
	InTx bool
	// Notes are what the Rewriter said of the statement or its
	// arguments.
	Notes []string
	// InEngine is set when Busy is asked, from inside the driver, whether
	// a wait its engine would make should go on (see WithWaits); Timeout
	// is then the connection's busy timeout.
	InEngine bool
	Timeout  time.Duration
	// Ctx is the context the caller gave the call (nil for a commit or a
	// rollback, which database/sql makes without one), and TxCtx the
	// context of the transaction the call belongs to (nil outside one).
	// When either ends while the caller is parked in Before, database/sql
	// waits for the call to return before it rolls the transaction back;
	// a hook that parks the caller should return the context's error then
	// (see ContextErr), as a driver does with a call whose context ended.
	Ctx, TxCtx context.Context
	// Seq tells calls apart: every begin, exec, query, commit and
	// rollback gets a number of its own (unique in the process, and
	// never 0), and the end of a query's rows, and its rows, carry the
	// query's. 0 on the calls a row iteration makes while it steps (a
	// wait for a lock). It is no part of what the call does.
	Seq uint64
}

// seqs numbers the calls (see Call.Seq).
var seqs atomic.Uint64

// nextSeq is the number of a new call.
func nextSeq() uint64 { return seqs.Add(1) }

// Done returns a channel closed when the call's context or its
// transaction's ends (nil when neither can end).
func (c Call) Done() (call, tx <-chan struct{}) {
	if c.Ctx != nil {
		call = c.Ctx.Done()
	}
	if c.TxCtx != nil {
		tx = c.TxCtx.Done()
	}
	return call, tx
}

// ContextErr is the error of the call's context, or of its transaction's,
// when one has ended (nil otherwise).
func (c Call) ContextErr() error {
	if c.Ctx != nil && c.Ctx.Err() != nil {
		return c.Ctx.Err()
	}
	if c.TxCtx != nil && c.TxCtx.Err() != nil {
		return c.TxCtx.Err()
	}
	return nil
}

// String renders the call for a trace: "exec INSERT ... [e1 300]".
func (c Call) String() string {
	s := string(c.Op)
	if c.SQL != "" && c.Op != Begin && c.Op != Commit && c.Op != Rollback {
		// One line, however the statement was laid out.
		s += " " + strings.Join(strings.Fields(c.SQL), " ")
	}
	if len(c.Args) > 0 {
		s += " ["
		for i, a := range c.Args {
			if i > 0 {
				s += " "
			}
			s += fmt.Sprint(a.Value)
		}
		s += "]"
	}
	return s
}

// kept is c as it may be rendered after it returned: its []byte
// arguments copied, since the caller may reuse their memory then.
func (c Call) kept() Call {
	for i, a := range c.Args {
		if _, ok := a.Value.([]byte); !ok {
			continue
		}
		args := slices.Clone(c.Args)
		for j := i; j < len(args); j++ {
			if b, ok := args[j].Value.([]byte); ok {
				args[j].Value = slices.Clone(b)
			}
		}
		c.Args = args
		break
	}
	return c
}

// Hook is told of every call. Both methods run on the goroutine that made
// the call, and may block it (the scheduler parks it there) or end it with
// runtime.Goexit (a crash).
type Hook interface {
	// Before is called before c reaches the database. A non-nil error is
	// returned to the caller instead of running c (an injected failure,
	// or a crash where runtime.Goexit is not safe). A hook should not fail
	// a commit or a rollback: their error leaves the transaction's fate
	// unknown to the caller.
	Before(c Call) error
	// Busy is called when the database answered c "busy" (a lock held by
	// another connection). nil retries c; an error is returned to the
	// caller (the transaction is rolled back first when c is a commit).
	Busy(c Call, err error) error
}

// ErrDeadlock is what a Hook's Busy returns to give a call up in a
// deadlock between connections (every one waits for another's lock): on
// a connection whose driver is a Deadlocker, the call answers as that
// engine's deadlock detector would; on any other, with the busy error it
// got, as when Busy returns it.
var ErrDeadlock = errors.New("sqlhook: given up in a deadlock between connections")

// Deadlocker is a driver connection whose engine detects deadlocks
// itself, where the scheduler finds them instead (see ErrDeadlock).
type Deadlocker interface {
	// Deadlock ends the connection's transaction as the engine's
	// detector would (rolled back on the server) and returns the
	// engine's answer to a statement given up in a deadlock; busy is the
	// answer the statement got.
	Deadlock(busy error) error
}

// answerDeadlock is the answer of a call whose hook gave it up with herr
// after the busy answer err (see ErrDeadlock).
func (cn *conn) answerDeadlock(herr, err error) error {
	if herr != ErrDeadlock {
		return herr
	}
	d, ok := cn.inner.(Deadlocker)
	if !ok {
		return err
	}
	var out error
	if derr := cn.do(func() error { out = d.Deadlock(err); return nil }); derr != nil {
		return derr
	}
	return out
}

// Rewriter changes a statement before it reaches the database.
type Rewriter interface {
	// Rewrite returns the text to run instead of query, and notes about
	// it for the Call.
	Rewrite(query string) (string, []string)
	// ArgNotes returns notes about a statement's arguments.
	ArgNotes(args []driver.NamedValue) []string
}

// Option tunes a Connector.
type Option func(*Connector)

// WithRewriter rewrites every statement of the connector's connections
// with rw.
func WithRewriter(rw Rewriter) Option { return func(c *Connector) { c.rw = rw } }

// WithWaits opens the connector's connections with open instead, each
// given a wait function that its driver calls where the database engine
// would wait for a lock (SQLite's busy handler): the hook's Busy decides
// the wait, with the Call's InEngine set, on the caller's goroutine and
// inside the driver (so it must return: a crash is an error, not
// runtime.Goexit). nil goes on waiting (the engine tries again); an error
// gives up, and the call returns that error, or the engine's busy answer
// when it is the one Busy was given. A busy answer the engine gives
// without waiting (no busy timeout, or its deadlock rule) is the call's
// answer as it is: no wait, no retry; a Conflicter hook is told of it.
func WithWaits(open func(wait func(timeout time.Duration) bool) (driver.Conn, error)) Option {
	return func(c *Connector) { c.openWait = open }
}

// Conflicter is a Hook told of the busy answers a connection opened with
// WithWaits got without waiting.
type Conflicter interface {
	Conflict(c Call, err error)
}

// errWaiting is the error Busy is given for a wait inside the engine.
var errWaiting = errors.New("sqlhook: the database engine waits for a lock")

// IsWaiting reports whether err is the one Busy is given for a wait the
// engine makes (see WithWaits): giving it back gives the wait up.
func IsWaiting(err error) bool { return errors.Is(err, errWaiting) }

// Observer is a Hook that is also told what every call returned to the
// caller, and every row a query handed it: what the caller has seen of the
// database. A model checker names a worker's state by it (a deterministic
// handler's next move is a function of its input and of what it saw).
// Both methods run on the goroutine that made the call.
type Observer interface {
	// Returned is told what call c returned: its error (an injected
	// failure included) and, for an exec that ran, its result.
	Returned(c Call, res driver.Result, err error)
	// Row is told of each row a query's iteration returned, as the
	// driver filled dest; dest must not be kept.
	Row(c Call, dest []driver.Value)
}

// RowsReporter is a Hook told how each query's rows ended, when the
// caller closed them (or database/sql did, for it): c is the end of the
// rows (its Seq the query's), read the number of rows the caller was
// handed (each of them told to an Observer's Row), and more the number of
// rows past them that the caller closed without reading: 0 when it read
// to the end, counted when it stopped early (the wrapper reads the rest
// of the result, which the caller never sees, before it closes it), -1
// when that count is unknown (an error while counting, or more than
// MaxUncounted rows). Rows that never close (the worker crashed, the
// connection was killed) are not reported. It runs on the goroutine
// that closed the rows.
type RowsReporter interface {
	RowsClosed(c Call, read, more int)
}

// MaxUncounted bounds the rows the wrapper reads past the caller's when
// it closes early (see RowsReporter).
const MaxUncounted = 1000

// ErrKilled is returned by every call on a connection after Kill.
var ErrKilled = errors.New("sqlhook: connection killed (the worker crashed)")

// Connector opens hooked connections through open.
type Connector struct {
	open     func() (driver.Conn, error)
	openWait func(wait func(time.Duration) bool) (driver.Conn, error)
	hook     Hook
	isBusy   func(error) bool
	rw       Rewriter

	mu     sync.Mutex
	conns  []*conn
	killed bool
}

// NewConnector returns a connector whose connections come from open and
// report to hook; isBusy recognises the real driver's lock-conflict error.
func NewConnector(open func() (driver.Conn, error), hook Hook, isBusy func(error) bool, opts ...Option) *Connector {
	c := &Connector{open: open, hook: hook, isBusy: isBusy}
	for _, o := range opts {
		o(c)
	}
	return c
}

// rewrite returns the text to run for query, and its notes.
func (c *Connector) rewrite(query string) (string, []string) {
	if c.rw == nil {
		return query, nil
	}
	return c.rw.Rewrite(query)
}

// notes adds the notes about args to the statement's.
func (c *Connector) notes(stmt []string, args []driver.NamedValue) []string {
	if c.rw == nil || len(args) == 0 {
		return stmt
	}
	if an := c.rw.ArgNotes(args); len(an) > 0 {
		return append(append([]string(nil), stmt...), an...)
	}
	return stmt
}

// Connect implements driver.Connector.
func (c *Connector) Connect(context.Context) (driver.Conn, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.killed {
		return nil, ErrKilled
	}
	cn := &conn{c: c}
	var inner driver.Conn
	var err error
	if c.openWait != nil {
		inner, err = c.openWait(cn.wait)
	} else {
		inner, err = c.open()
	}
	if err != nil {
		return nil, err
	}
	cn.inner = inner
	c.conns = append(c.conns, cn)
	return cn, nil
}

// Driver implements driver.Connector.
func (c *Connector) Driver() driver.Driver { return connectorDriver{c} }

type connectorDriver struct{ c *Connector }

func (d connectorDriver) Open(string) (driver.Conn, error) { return d.c.Connect(context.Background()) }

// Kill closes every connection under whatever it was doing (the database
// rolls open transactions back) and makes every later call fail.
func (c *Connector) Kill() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.killed = true
	for _, cn := range c.conns {
		cn.kill()
	}
}

// InTx reports whether one of the connections is inside a transaction, and
// if so the statement it last ran there. A transaction whose context ended
// is rolled back first (see EndEnded): database/sql's watcher would roll
// it back, later.
func (c *Connector) InTx() (bool, string) {
	c.EndEnded()
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, cn := range c.conns {
		if !cn.dead && cn.inTx && !cn.txEnded {
			return true, cn.last.String()
		}
	}
	return false, ""
}

// Holding reports whether one of the connections may hold a lock of the
// database's: it is inside a transaction, or a query's rows are still
// open (SQLite keeps a shared lock until they end).
func (c *Connector) Holding() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, cn := range c.conns {
		if !cn.dead && ((cn.inTx && !cn.txEnded) || cn.rowsOpen > 0) {
			return true
		}
	}
	return false
}

// EndEnded rolls back, now, every open transaction whose context ended
// (a handler that cancels its context to roll back): what database/sql's
// watcher of the context does on a goroutine of its own, at a moment the
// Go scheduler picks. Call it only while no call is in progress on the
// connections.
func (c *Connector) EndEnded() {
	c.mu.Lock()
	var ended []*conn
	for _, cn := range c.conns {
		if !cn.dead && cn.inTx && !cn.txEnded && cn.txCtx != nil && cn.txCtx.Err() != nil {
			ended = append(ended, cn)
		}
	}
	c.mu.Unlock()
	for _, cn := range ended {
		cn.endTx()
	}
}

type conn struct {
	inner driver.Conn
	c     *Connector
	dead  bool
	inTx  bool
	// last is the call made last, rendered only when InTx is asked for
	// it (a handler that leaks a transaction): most calls never are.
	last Call
	// op is held across every call on inner, so that Kill never closes
	// inner under a call; closeLater says Kill came during one.
	op         sync.Mutex
	closeLater bool
	// txCtx is the context of the open transaction; txEnded says it was
	// rolled back because that context ended.
	txCtx   context.Context
	txEnded bool
	// rowsOpen counts the rows not yet closed (under c.mu).
	rowsOpen int
	// cur is the call in progress on inner, for a wait the engine makes
	// (see WithWaits); waited says one was made, gaveUp why it ended.
	cur    Call
	waited bool
	gaveUp error
	// open are the rows and statements not yet closed: a connection
	// closes for real (and rolls back) only once they are.
	open []io.Closer
	// counting is set while the wrapper counts the rows a caller closed
	// without reading (see RowsReporter); under op.
	counting bool
}

func (cn *conn) track(c io.Closer) {
	cn.c.mu.Lock()
	defer cn.c.mu.Unlock()
	cn.open = append(cn.open, c)
}

func (cn *conn) untrack(c io.Closer) {
	cn.c.mu.Lock()
	defer cn.c.mu.Unlock()
	for i, o := range cn.open {
		if o == c {
			cn.open = append(cn.open[:i], cn.open[i+1:]...)
			return
		}
	}
}

var (
	_ driver.Conn               = (*conn)(nil)
	_ driver.ConnBeginTx        = (*conn)(nil)
	_ driver.ExecerContext      = (*conn)(nil)
	_ driver.QueryerContext     = (*conn)(nil)
	_ driver.ConnPrepareContext = (*conn)(nil)
	_ driver.SessionResetter    = (*conn)(nil)
	_ driver.Validator          = (*conn)(nil)
)

// kill closes the connection, now or, when a call is in progress on the
// real driver, as soon as it returns. cn.c.mu is held.
func (cn *conn) kill() {
	if cn.dead {
		return
	}
	cn.dead = true
	cn.inTx = false
	if !cn.op.TryLock() {
		cn.closeLater = true
		return
	}
	cn.closeInner()
	cn.op.Unlock()
}

// closeInner closes what is open on inner, then inner (the database rolls
// an open transaction back). cn.op is held.
func (cn *conn) closeInner() {
	for i := len(cn.open) - 1; i >= 0; i-- {
		_ = cn.open[i].Close()
	}
	cn.open = nil
	_ = cn.inner.Close()
}

// do runs f on inner under the op lock; ok is false when the connection
// was killed before it could start.
func (cn *conn) do(f func() error) (err error) {
	cn.op.Lock()
	defer func() {
		cn.c.mu.Lock()
		later := cn.closeLater
		cn.closeLater = false
		cn.c.mu.Unlock()
		if later {
			cn.closeInner()
		}
		cn.op.Unlock()
	}()
	if cn.isDead() {
		return ErrKilled
	}
	return f()
}

// txState reads the transaction's state under the connector's lock:
// database/sql's watcher of a transaction's context rolls it back on a
// goroutine of its own while the scheduler asks (see EndEnded).
func (cn *conn) txState() (inTx, ended bool, ctx context.Context) {
	cn.c.mu.Lock()
	defer cn.c.mu.Unlock()
	return cn.inTx, cn.txEnded, cn.txCtx
}

// setTx sets the transaction's state under the connector's lock.
func (cn *conn) setTx(inTx bool, ctx context.Context, ended bool) {
	cn.c.mu.Lock()
	defer cn.c.mu.Unlock()
	cn.inTx, cn.txCtx, cn.txEnded = inTx, ctx, ended
}

// inTxNow reports whether the connection is inside a transaction.
func (cn *conn) inTxNow() bool {
	inTx, _, _ := cn.txState()
	return inTx
}

func (cn *conn) isDead() bool {
	cn.c.mu.Lock()
	defer cn.c.mu.Unlock()
	return cn.dead
}

// call runs do as c: Before first, then do, retried while it answers busy
// and Busy says so.
func (cn *conn) call(c Call, do func() error) error {
	if cn.isDead() {
		return ErrKilled
	}
	inTx, _, txCtx := cn.txState()
	c.InTx = inTx
	if c.InTx {
		c.TxCtx = txCtx
	}
	if err := c.ContextErr(); err != nil {
		// The context ended before the call: a driver answers at once.
		cn.endTx()
		return err
	}
	cn.last = c.kept()
	if err := cn.c.hook.Before(c); err != nil {
		if c.ContextErr() != nil {
			cn.endTx()
		}
		return err
	}
	if cn.c.openWait != nil {
		cn.cur, cn.waited, cn.gaveUp = c, false, nil
		err := cn.do(do)
		if err == nil || !cn.c.isBusy(err) {
			return err
		}
		if cn.gaveUp != nil && !IsWaiting(cn.gaveUp) {
			if c.ContextErr() != nil {
				cn.endTx()
			}
			return cn.gaveUp
		}
		if !cn.waited {
			if h, ok := cn.c.hook.(Conflicter); ok {
				h.Conflict(c, err)
			}
		}
		return err
	}
	for {
		err := cn.do(do)
		if err == nil || !cn.c.isBusy(err) {
			return err
		}
		if herr := cn.c.hook.Busy(c, err); herr != nil {
			herr = cn.answerDeadlock(herr, err)
			if c.ContextErr() != nil {
				cn.endTx()
			}
			return herr
		}
	}
}

// wait is a connection's wait function (see WithWaits): the engine calls
// it, inside the call in progress, where it would wait for a lock.
func (cn *conn) wait(timeout time.Duration) bool {
	if cn.counting {
		// The wrapper reads rows past the caller's (see RowsReporter):
		// no wait, no scheduling point for what the caller never sees.
		return false
	}
	c := cn.cur
	c.InEngine, c.Timeout = true, timeout
	cn.waited = true
	if err := cn.c.hook.Busy(c, errWaiting); err != nil {
		cn.gaveUp = err
		return false
	}
	return true
}

// endTx rolls the open transaction back on inner because its context
// ended, once; its later Rollback is then no call.
func (cn *conn) endTx() {
	cn.c.mu.Lock()
	claim := cn.inTx && !cn.txEnded && cn.txCtx != nil && cn.txCtx.Err() != nil
	if claim {
		cn.txEnded = true
	}
	cn.c.mu.Unlock()
	if !claim {
		return
	}
	_ = cn.do(func() error { return cn.execInner("ROLLBACK") })
}

// tell tells an Observer hook what c returned.
func (cn *conn) tell(c Call, res driver.Result, err error) {
	if o, ok := cn.c.hook.(Observer); ok {
		o.Returned(c, res, err)
	}
}

func (cn *conn) Prepare(query string) (driver.Stmt, error) {
	return cn.PrepareContext(context.Background(), query)
}

func (cn *conn) PrepareContext(_ context.Context, query string) (driver.Stmt, error) {
	if cn.isDead() {
		return nil, ErrKilled
	}
	run, notes := cn.c.rewrite(query)
	var st driver.Stmt
	err := cn.do(func() error {
		var err error
		if p, ok := cn.inner.(driver.ConnPrepareContext); ok {
			st, err = p.PrepareContext(context.Background(), run)
		} else {
			st, err = cn.inner.Prepare(run)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	cn.track(st)
	return &stmt{inner: st, cn: cn, query: query, notes: notes}, nil
}

func (cn *conn) Close() error {
	cn.c.mu.Lock()
	defer cn.c.mu.Unlock()
	if cn.dead {
		return nil
	}
	cn.kill()
	return nil
}

func (cn *conn) Begin() (driver.Tx, error) {
	return cn.BeginTx(context.Background(), driver.TxOptions{})
}

func (cn *conn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	c := Call{Op: Begin, SQL: "BEGIN", Ctx: ctx, Seq: nextSeq()}
	err := cn.call(c, func() error {
		var err error
		if b, ok := cn.inner.(driver.ConnBeginTx); ok {
			_, err = b.BeginTx(context.Background(), opts)
		} else {
			//lint:ignore SA1019 the driver has no BeginTx
			_, err = cn.inner.Begin()
		}
		return err
	})
	cn.tell(c, nil, err)
	if err != nil {
		return nil, err
	}
	cn.setTx(true, ctx, false)
	return &tx{cn: cn}, nil
}

// execInner runs a statement with no arguments on the inner connection.
func (cn *conn) execInner(query string) error {
	if e, ok := cn.inner.(driver.ExecerContext); ok {
		_, err := e.ExecContext(context.Background(), query, nil)
		return err
	}
	st, err := cn.inner.Prepare(query)
	if err != nil {
		return err
	}
	defer st.Close()
	//lint:ignore SA1019 the driver has no ExecContext
	_, err = st.Exec(nil)
	return err
}

func (cn *conn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	e, ok := cn.inner.(driver.ExecerContext)
	if !ok {
		return nil, driver.ErrSkip
	}
	run, notes := cn.c.rewrite(query)
	var res driver.Result
	c := Call{Op: Exec, SQL: query, Args: args, Notes: cn.c.notes(notes, args), Ctx: ctx, Seq: nextSeq()}
	err := cn.call(c, func() error {
		var err error
		res, err = e.ExecContext(context.Background(), run, args)
		return err
	})
	cn.tell(c, res, err)
	return res, err
}

func (cn *conn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	q, ok := cn.inner.(driver.QueryerContext)
	if !ok {
		return nil, driver.ErrSkip
	}
	run, notes := cn.c.rewrite(query)
	var rows driver.Rows
	c := Call{Op: Query, SQL: query, Args: args, Notes: cn.c.notes(notes, args), Ctx: ctx, Seq: nextSeq()}
	err := cn.call(c, func() error {
		var err error
		rows, err = q.QueryContext(context.Background(), run, args)
		return err
	})
	cn.tell(c, nil, err)
	if err != nil {
		return nil, err
	}
	cn.track(rows)
	cn.rowsOpened(1)
	return &wrappedRows{inner: rows, cn: cn, query: query, ctx: ctx, txCtx: c.TxCtx, seq: c.Seq}, nil
}

// rowsOpened counts rows opened (1) or closed (-1).
func (cn *conn) rowsOpened(n int) {
	cn.c.mu.Lock()
	cn.rowsOpen += n
	cn.c.mu.Unlock()
}

func (cn *conn) ResetSession(context.Context) error {
	if cn.isDead() {
		return driver.ErrBadConn
	}
	if r, ok := cn.inner.(driver.SessionResetter); ok {
		return cn.do(func() error { return r.ResetSession(context.Background()) })
	}
	return nil
}

func (cn *conn) IsValid() bool {
	if cn.isDead() {
		return false
	}
	if v, ok := cn.inner.(driver.Validator); ok {
		return v.IsValid()
	}
	return true
}

// tx ends a transaction by running COMMIT or ROLLBACK on the connection
// itself, so that a commit that meets a lock can be retried (a driver's
// own Commit may roll back on busy).
type tx struct{ cn *conn }

func (t *tx) Commit() error {
	cn := t.cn
	c := Call{Op: Commit, SQL: "COMMIT", Seq: nextSeq()}
	// database/sql cancels the transaction's context before it commits:
	// the commit does not look at it.
	cn.setTx(true, nil, false)
	err := cn.call(c, func() error { return cn.execInner("COMMIT") })
	cn.tell(c, nil, err)
	if err != nil && !errors.Is(err, ErrKilled) && !cn.isDead() {
		// Leave the connection clean: a failed commit is a rolled-back
		// transaction, as database/sql expects.
		_ = cn.do(func() error { return cn.execInner("ROLLBACK") })
	}
	cn.setTx(false, nil, false)
	return err
}

func (t *tx) Rollback() error {
	cn := t.cn
	if cn.isDead() {
		return nil
	}
	if _, ended, txCtx := cn.txState(); ended || (txCtx != nil && txCtx.Err() != nil) {
		// Its context ended: rolled back already, or now, by whichever of
		// database/sql's watcher and the caller comes first, with no
		// scheduling point (see the package documentation).
		cn.endTx()
		cn.setTx(false, nil, false)
		return nil
	}
	c := Call{Op: Rollback, SQL: "ROLLBACK", Seq: nextSeq()}
	err := cn.call(c, func() error { return cn.execInner("ROLLBACK") })
	cn.tell(c, nil, err)
	cn.setTx(false, nil, false)
	return err
}

type stmt struct {
	inner driver.Stmt
	cn    *conn
	query string // as the caller wrote it
	notes []string
}

var (
	_ driver.StmtExecContext  = (*stmt)(nil)
	_ driver.StmtQueryContext = (*stmt)(nil)
)

func (s *stmt) Close() error {
	if s.cn.isDead() {
		return nil
	}
	s.cn.untrack(s.inner)
	return s.cn.do(s.inner.Close)
}
func (s *stmt) NumInput() int { return s.inner.NumInput() }

func (s *stmt) Exec(args []driver.Value) (driver.Result, error) {
	return s.ExecContext(context.Background(), named(args))
}

func (s *stmt) Query(args []driver.Value) (driver.Rows, error) {
	return s.QueryContext(context.Background(), named(args))
}

func named(args []driver.Value) []driver.NamedValue {
	out := make([]driver.NamedValue, len(args))
	for i, v := range args {
		out[i] = driver.NamedValue{Ordinal: i + 1, Value: v}
	}
	return out
}

func unnamed(args []driver.NamedValue) []driver.Value {
	out := make([]driver.Value, len(args))
	for i, a := range args {
		out[i] = a.Value
	}
	return out
}

func (s *stmt) ExecContext(ctx context.Context, args []driver.NamedValue) (driver.Result, error) {
	var res driver.Result
	c := Call{Op: Exec, SQL: s.query, Args: args, Notes: s.cn.c.notes(s.notes, args), Ctx: ctx, Seq: nextSeq()}
	err := s.cn.call(c, func() error {
		var err error
		if e, ok := s.inner.(driver.StmtExecContext); ok {
			res, err = e.ExecContext(context.Background(), args)
		} else {
			//lint:ignore SA1019 the driver has no ExecContext
			res, err = s.inner.Exec(unnamed(args))
		}
		return err
	})
	s.cn.tell(c, res, err)
	return res, err
}

func (s *stmt) QueryContext(ctx context.Context, args []driver.NamedValue) (driver.Rows, error) {
	var rows driver.Rows
	c := Call{Op: Query, SQL: s.query, Args: args, Notes: s.cn.c.notes(s.notes, args), Ctx: ctx, Seq: nextSeq()}
	err := s.cn.call(c, func() error {
		var err error
		if q, ok := s.inner.(driver.StmtQueryContext); ok {
			rows, err = q.QueryContext(context.Background(), args)
		} else {
			//lint:ignore SA1019 the driver has no QueryContext
			rows, err = s.inner.Query(unnamed(args))
		}
		return err
	})
	s.cn.tell(c, nil, err)
	if err != nil {
		return nil, err
	}
	s.cn.track(rows)
	s.cn.rowsOpened(1)
	return &wrappedRows{inner: rows, cn: s.cn, query: s.query, ctx: ctx, txCtx: c.TxCtx, seq: c.Seq}, nil
}

// wrappedRows makes the end of a row iteration (Close, which database/sql
// calls when Next runs out or Scan of a single row is done) a point, and
// retries a step that answers busy.
type wrappedRows struct {
	inner       driver.Rows
	cn          *conn
	query       string
	closed      bool
	innerClosed bool
	// ctx and txCtx are the query's contexts (see Call).
	ctx, txCtx context.Context
	// seq is the query's Call.Seq; read counts the rows handed to the
	// caller, and eof says Next told it there are no more.
	seq  uint64
	read int
	eof  bool
}

// countRest reads the rows the caller closed without reading, and counts
// them (see RowsReporter). cn.op is held.
func (r *wrappedRows) countRest() int {
	if r.eof {
		return 0
	}
	r.cn.counting = true
	defer func() { r.cn.counting = false }()
	dest := make([]driver.Value, len(r.inner.Columns()))
	for n := 0; n <= MaxUncounted; n++ {
		switch err := r.inner.Next(dest); {
		case err == io.EOF:
			return n
		case err != nil:
			return -1
		}
	}
	return -1
}

func (r *wrappedRows) Columns() []string { return r.inner.Columns() }

func (r *wrappedRows) Close() error {
	if r.closed {
		return nil
	}
	r.closed = true
	if r.cn.isDead() {
		return nil
	}
	closeInner := func() error {
		if r.innerClosed {
			// A driver's Close that answered busy has finalized its
			// statement all the same: a second Close would free it
			// twice.
			return nil
		}
		r.innerClosed = true
		more := -1
		if _, ok := r.cn.c.hook.(RowsReporter); ok {
			more = r.countRest()
		}
		r.cn.untrack(r.inner)
		r.cn.rowsOpened(-1)
		err := r.inner.Close()
		if rr, ok := r.cn.c.hook.(RowsReporter); ok {
			rr.RowsClosed(Call{Op: RowsEnd, SQL: r.query, Seq: r.seq}, r.read, more)
		}
		return err
	}
	c := Call{Op: RowsEnd, SQL: r.query, Ctx: r.ctx, Seq: r.seq}
	if c.ContextErr() != nil || (r.txCtx != nil && r.txCtx.Err() != nil) {
		// database/sql's watcher closes rows whose context ended: at once,
		// no scheduling point (see the package documentation).
		_ = r.cn.do(closeInner)
		r.cn.endTx()
		return nil
	}
	err := r.cn.call(c, closeInner)
	if err != nil && c.ContextErr() != nil {
		// The context ended while the caller waited at the end of its
		// rows: they are closed all the same.
		_ = r.cn.do(closeInner)
	}
	r.cn.tell(c, nil, err)
	return err
}

func (r *wrappedRows) Next(dest []driver.Value) error {
	for {
		if r.cn.c.openWait != nil {
			r.cn.cur, r.cn.waited, r.cn.gaveUp = Call{Op: Query, SQL: r.query, InTx: r.cn.inTxNow(), Ctx: r.ctx, TxCtx: r.txCtx}, false, nil
		}
		err := r.cn.do(func() error { return r.inner.Next(dest) })
		if r.cn.c.openWait != nil && err != nil && err != io.EOF && r.cn.c.isBusy(err) {
			if g := r.cn.gaveUp; g != nil && !IsWaiting(g) {
				err = g
			}
			r.cn.tell(Call{Op: Query, SQL: r.query}, nil, err)
			return err
		}
		if errors.Is(err, ErrKilled) {
			return err
		}
		if err == nil {
			r.read++
			if o, ok := r.cn.c.hook.(Observer); ok {
				o.Row(Call{Op: Query, SQL: r.query, Seq: r.seq}, dest)
			}
			return nil
		}
		if err == io.EOF {
			r.eof = true
			return err
		}
		if !r.cn.c.isBusy(err) {
			r.cn.tell(Call{Op: Query, SQL: r.query}, nil, err)
			return err
		}
		if herr := r.cn.c.hook.Busy(Call{Op: Query, SQL: r.query, InTx: r.cn.inTxNow(), Ctx: r.ctx, TxCtx: r.txCtx}, err); herr != nil {
			herr = r.cn.answerDeadlock(herr, err)
			r.cn.tell(Call{Op: Query, SQL: r.query}, nil, herr)
			return herr
		}
	}
}
