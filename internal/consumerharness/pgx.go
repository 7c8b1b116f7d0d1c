package consumerharness

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/idemcheck/idemcheck/impl/contract/handler"
	"github.com/idemcheck/idemcheck/internal/consumerharness/backend"
	"github.com/idemcheck/idemcheck/internal/consumerharness/sqlhook"
	"github.com/idemcheck/idemcheck/internal/sqlscan"
)

// The pgx route: a consumer written against pgx (Consumer.PgxHandler)
// gets a *pgxpool.Pool of its own per worker incarnation, on the
// scenario's PostgreSQL database. pgx calls its tracer synchronously
// before every query, exec, batch and copy (BEGIN, COMMIT and ROLLBACK
// are execs), on the caller's goroutine: the tracer calls the
// worker's hook there, as the wrapping database/sql driver does, so that
// the scheduler decides at each of them. A tracer cannot fail a call by
// returning an error: it returns a context already cancelled, which pgx
// checks before it sends anything, so the call fails with nothing done.
//
// Lock waits: a worker's statement that meets a lock another worker
// holds waits as on the database/sql route, parked by the scheduler until
// the lock is free; the session below pgx runs it again (see
// backend.PgxWait). So the workers' transactions interleave as the
// server lets them.

// pgxSeqs numbers the pgx calls (sqlhook.Call.Seq), in a range of their
// own: far above the numbers sqlhook gives.
var pgxSeqs atomic.Uint64

func init() { pgxSeqs.Store(1 << 62) }

// pgxPoolKey carries a pgx worker's pool in its deliveries' contexts.
type pgxPoolKey struct{}

// pgxWorker is one worker incarnation's pool and the connections it
// opened; it stands for the worker's connections as sqlhook's Connector
// does on the database/sql route (see conns).
type pgxWorker struct {
	w    *worker
	db   backend.Pgx
	pool *pgxpool.Pool
	mu   sync.Mutex
	// conns are the connections the pool opened, killed is set by Kill,
	// last is the statement each connection last ran.
	conns  []*pgx.Conn
	last   map[*pgx.Conn]string
	killed bool
	// waited is set when the call in progress waited for a lock: its
	// lock timeout, should it be the answer, was given up after a wait,
	// not met at once.
	waited atomic.Bool
}

// conns is what the scheduler asks of a worker's connections, on either
// route.
type conns interface {
	Kill()
	InTx() (bool, string)
	Holding() bool
	EndEnded()
}

var (
	_ conns = (*sqlhook.Connector)(nil)
	_ conns = (*pgxWorker)(nil)
)

// pgxFactory returns the factory of a PgxHandler consumer: the handler
// runs on the pool its delivery's context carries.
func pgxFactory(h func(ctx context.Context, pool *pgxpool.Pool, m handler.Message) error) handler.Worker {
	f := func(ctx context.Context, _ *sql.DB, m handler.Message) error {
		pool, _ := ctx.Value(pgxPoolKey{}).(*pgxpool.Pool)
		return h(ctx, pool, m)
	}
	return func(string, *sql.DB) (handler.Func, io.Closer, error) { return f, nil, nil }
}

// pgxDatabase returns db as a database a pgx consumer runs on, or a bad
// input error.
func pgxDatabase(c Consumer, db backend.Database, name string) (backend.Pgx, error) {
	p, ok := db.(backend.Pgx)
	if !ok {
		return nil, fmt.Errorf("%w: consumer %q: a PgxHandler runs on PostgreSQL only: give the Postgres(dsn) option (the backend is %s)", ErrBadInput, c.displayName(), name)
	}
	return p, nil
}

// startPgx makes w's pool.
func (r *run) startPgx(w *worker) error {
	db, err := pgxDatabase(r.c, r.db, r.dbName)
	if err != nil {
		return err
	}
	cfg, err := db.PgxConfig()
	if err != nil {
		return fmt.Errorf("%w: %w", ErrBadInput, err)
	}
	pw := &pgxWorker{w: w, db: db, last: map[*pgx.Conn]string{}}
	cfg.ConnConfig.Tracer = pgxTracer{pw}
	// The pool opens its first connection at once, on a goroutine of its
	// own: the workers' connections are made side by side while the
	// scenario starts, rather than one after another at each worker's
	// first call. Which connection a call gets never matters: they are
	// alike.
	cfg.MinConns = 1
	cfg.AfterConnect = func(_ context.Context, c *pgx.Conn) error {
		pw.mu.Lock()
		defer pw.mu.Unlock()
		pw.conns = append(pw.conns, c)
		return nil
	}
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		return fmt.Errorf("%w: open a pgx pool: %w", ErrBadInput, err)
	}
	pw.pool = pool
	w.pgx, w.conn = pw, pw
	return nil
}

// Kill rolls back, at once, what each connection was doing, then closes
// it: the database releases the worker's locks before the schedule goes
// on (closing alone would let the server roll back at a moment of its
// own), and every later call of the worker fails.
func (p *pgxWorker) Kill() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.killed {
		return
	}
	p.killed = true
	for _, c := range p.conns {
		pc := c.PgConn()
		if pc.IsClosed() {
			continue
		}
		if !pc.IsBusy() && pc.TxStatus() != 'I' {
			_ = pc.Exec(context.Background(), "ROLLBACK").Close()
		}
		if !pc.IsBusy() {
			_ = pc.Exec(context.Background(), "SELECT pg_catalog.pg_advisory_unlock_all()").Close()
		}
		_ = pc.Conn().Close()
	}
}

// InTx reports whether one of the connections is inside a transaction,
// and the statement it last ran.
func (p *pgxWorker) InTx() (bool, string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.killed {
		return false, ""
	}
	for _, c := range p.conns {
		if !c.PgConn().IsClosed() && c.PgConn().TxStatus() != 'I' {
			return true, p.last[c]
		}
	}
	return false, ""
}

// Holding reports whether one of the connections is inside a
// transaction.
func (p *pgxWorker) Holding() bool {
	open, _ := p.InTx()
	return open
}

// EndEnded does nothing: pgx ends a transaction whose context ended on
// the caller's next call, which is a call of the schedule's.
func (p *pgxWorker) EndEnded() {}

// close closes the pool. Connections a crashed handler never released
// were closed by Kill; Close does not wait for them.
func (p *pgxWorker) close() { p.pool.Close() }

// othersInTx reports whether a worker other than w is inside a
// transaction on the pgx route.
func (r *run) othersInTx(w *worker) bool {
	for _, o := range r.workers {
		if o != w && o.pgx != nil && o.pgx.Holding() {
			return true
		}
	}
	return false
}

// pgxTracer is the tracer of a pgx worker's connections.
type pgxTracer struct{ p *pgxWorker }

var (
	_ pgx.QueryTracer    = pgxTracer{}
	_ pgx.BatchTracer    = pgxTracer{}
	_ pgx.CopyFromTracer = pgxTracer{}
	_ pgx.PrepareTracer  = pgxTracer{}
)

// failCall makes the call that gets the returned context fail with err
// before anything is sent.
func failCall(ctx context.Context, err error) context.Context {
	c, cancel := context.WithCancelCause(ctx)
	cancel(err)
	return c
}

// crashed is the error a pgx call fails with for err of the hook's. A
// crash does not end the worker's goroutine here, as it does on the
// database/sql route: pgx and its pool would skip giving the connection
// back, and the pool could not be closed. The call fails instead, as
// every later call of the crashed worker does (its connections were
// killed), until the handler returns.
func crashed(err error) error {
	if err == errCrashAt {
		return errCrashing
	}
	return err
}

// pgxOp names a statement's call as the database/sql route does.
func pgxOp(query string) sqlhook.Op {
	w := sqlscan.Significant(query)
	if len(w) == 0 {
		return sqlhook.Exec
	}
	switch {
	case w[0].Is("begin"), w[0].Is("start"):
		return sqlhook.Begin
	case w[0].Is("commit"), w[0].Is("end"):
		return sqlhook.Commit
	case w[0].Is("rollback") && !(len(w) > 1 && w[1].Is("to")), w[0].Is("abort"):
		return sqlhook.Rollback
	case w[0].Is("select"), w[0].Is("with"), w[0].Is("values"), w[0].Is("table"), w[0].Is("show"):
		return sqlhook.Query
	}
	return sqlhook.Exec
}

// start is where every traced call stops: the worker's hook decides, and
// the session is told what the statement does should it meet a lock
// another worker holds (armWaits).
func (t pgxTracer) start(ctx context.Context, conn *pgx.Conn, op sqlhook.Op, query string, args []any, stmts ...string) context.Context {
	ctx, call := t.stop(ctx, conn, op, query, args, stmts...)
	return context.WithValue(ctx, pgxCallKey{}, call)
}

// stop is start's work; it returns the call, or a zero one for a call of
// a crashed worker, which fails at once.
func (t pgxTracer) stop(ctx context.Context, conn *pgx.Conn, op sqlhook.Op, query string, args []any, stmts ...string) (context.Context, sqlhook.Call) {
	p, w := t.p, t.p.w
	p.mu.Lock()
	killed := p.killed
	if !killed {
		p.last[conn] = query
	}
	p.mu.Unlock()
	if killed || w.crashing.Load() {
		return failCall(ctx, errCrashing), sqlhook.Call{}
	}
	named := make([]driver.NamedValue, len(args))
	for i, a := range args {
		named[i] = driver.NamedValue{Ordinal: i + 1, Value: a}
	}
	call := sqlhook.Call{Op: op, SQL: query, Args: named, InTx: conn.PgConn().TxStatus() != 'I', Ctx: ctx, Seq: pgxSeqs.Add(1)}
	if len(stmts) == 0 {
		stmts = []string{query}
	}
	if cl, ok := w.r.db.(backend.Clocked); ok {
		for _, q := range stmts {
			rewritten, notes := cl.Rewrite(q)
			if rewritten != q {
				notes = append(notes, "a clock keyword of the SQL standard (CURRENT_TIMESTAMP, LOCALTIMESTAMP, ...): pgx sends the statement as written; call now() instead")
			}
			call.Notes = append(call.Notes, notes...)
		}
		call.Notes = append(call.Notes, cl.ArgNotes(named)...)
	}
	h := hook{w}
	if err := h.before(call); err != nil {
		return failCall(ctx, crashed(err)), call
	}
	before := func() error {
		for _, q := range stmts {
			if err := p.db.PgxBefore(q); err != nil {
				return err
			}
		}
		return nil
	}
	if err := before(); err != nil {
		return failCall(ctx, err), call
	}
	t.armWaits(conn, call, stmts, before)
	return ctx, call
}

// armWaits tells conn's session what the statement of call does on a lock
// wait (see backend.PgxWait): outside a transaction it waits and runs
// again; inside one, while another worker is inside one too, it runs
// under a savepoint and waits; the hook decides each wait, as it does a
// database/sql worker's. The statements that end a transaction or work
// its savepoints are never run again, nor a COPY, whose rows pgx streams.
func (t pgxTracer) armWaits(conn *pgx.Conn, call sqlhook.Call, stmts []string, again func() error) {
	armer, ok := conn.PgConn().Conn().(backend.PgxSession)
	if !ok {
		return
	}
	status := conn.PgConn().TxStatus()
	if (call.Op != sqlhook.Exec && call.Op != sqlhook.Query) || !rerunnable(stmts) ||
		(status != 'I' && (status != 'T' || !t.p.w.r.othersInTx(t.p.w))) {
		armer.Arm(nil)
		return
	}
	h := hook{t.p.w}
	armer.Arm(&backend.PgxWait{
		Savepoint: status == 'T',
		Again:     again,
		Wait: func(busy error) error {
			t.p.waited.Store(true)
			switch err := h.busy(call, busy); err {
			case nil, busy:
				return err
			case sqlhook.ErrDeadlock:
				return backend.ErrPgxDeadlock
			default:
				return crashed(err)
			}
		},
	})
}

// rerunnable reports whether statements may be run again after a lock
// timeout: none of them (nor any of several in one text) ends a
// transaction, works a savepoint or copies.
func rerunnable(stmts []string) bool {
	for _, q := range stmts {
		first := true
		for _, tok := range sqlscan.Significant(q) {
			if tok.Kind == sqlscan.Semicolon {
				first = true
				continue
			}
			if first {
				for _, k := range []string{"begin", "start", "commit", "end", "rollback", "abort", "savepoint", "release", "prepare", "copy"} {
					if tok.Is(k) {
						return false
					}
				}
			}
			first = false
		}
	}
	return true
}

// end follows a call: what it returned is told to the hook (pgxReturned);
// a transaction begun records its start (now()); a transaction a failed
// call left open is rolled back at once, as the database/sql route's
// connection does, rather than by the server once pgx closed the
// connection; a lock timeout met at once is told to the hook.
func (t pgxTracer) end(ctx context.Context, conn *pgx.Conn, tag *pgconn.CommandTag, err error) {
	call, _ := ctx.Value(pgxCallKey{}).(sqlhook.Call)
	var res driver.Result
	if call.Op == sqlhook.Exec && err == nil && tag != nil {
		res = driver.RowsAffected(tag.RowsAffected())
	}
	pc := conn.PgConn()
	var replies uint64
	if session, ok := pc.Conn().(backend.PgxSession); ok {
		session.Arm(nil)
		replies = session.Replies()
	}
	waited := t.p.waited.Swap(false)
	if call.Seq != 0 {
		hook{t.p.w}.pgxReturned(call, res, err, replies)
	}
	if pc.IsClosed() || pc.IsBusy() {
		return
	}
	switch {
	case call.Op == sqlhook.Begin && err == nil && pc.TxStatus() == 'T':
		_ = pc.Exec(context.Background(), t.p.db.PgxTxStart()).Close()
	case err != nil && (call.Op == sqlhook.Commit || call.Op == sqlhook.Rollback) && pc.TxStatus() != 'I':
		_ = pc.Exec(context.Background(), "ROLLBACK").Close()
	}
	if err != nil && !waited && t.p.w.r.db.IsBusy(err) {
		call.InTx = pc.TxStatus() != 'I'
		hook{t.p.w}.Conflict(call, err)
	}
}

// pgxReturned tells the trace and the model checker what a pgx call
// returned, as hook.Returned and hook.Row do on the database/sql route:
// an exec's rows affected and an error join the call's trace line; the
// model checker's history of the worker gets them too, and a digest of
// the rows and results the server sent for the call (pgx's tracer shows
// no row, and two states in which a query handed the worker different
// rows must not be named alike).
func (h hook) pgxReturned(c sqlhook.Call, res driver.Result, err error, replies uint64) {
	if !h.w.crashing.Load() && (c.Op != sqlhook.Query || err != nil) {
		h.w.r.trace.traceReturned(c, res, err)
	}
	if v := h.w.r.v; v != nil {
		h.w.r.mu.Lock()
		defer h.w.r.mu.Unlock()
		v.returned(h.w, c, res, err)
		v.row(h.w, []driver.Value{int64(replies)})
	}
}

// TraceQueryStart implements pgx.QueryTracer.
func (t pgxTracer) TraceQueryStart(ctx context.Context, conn *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	return t.start(ctx, conn, pgxOp(d.SQL), d.SQL, d.Args)
}

// TraceQueryEnd implements pgx.QueryTracer.
func (t pgxTracer) TraceQueryEnd(ctx context.Context, conn *pgx.Conn, d pgx.TraceQueryEndData) {
	t.end(ctx, conn, &d.CommandTag, d.Err)
}

type pgxCallKey struct{}

// TraceBatchStart implements pgx.BatchTracer: a batch is one call, its
// statements joined.
func (t pgxTracer) TraceBatchStart(ctx context.Context, conn *pgx.Conn, d pgx.TraceBatchStartData) context.Context {
	var sqls []string
	var args []any
	for _, q := range d.Batch.QueuedQueries {
		sqls = append(sqls, q.SQL)
		args = append(args, q.Arguments...)
	}
	query := strings.Join(sqls, "; ")
	return t.start(ctx, conn, sqlhook.Exec, "batch: "+query, args, sqls...)
}

// TraceBatchQuery implements pgx.BatchTracer.
func (pgxTracer) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {}

// TraceBatchEnd implements pgx.BatchTracer. A batch's rows affected are
// its statements', which pgx does not sum: none are told.
func (t pgxTracer) TraceBatchEnd(ctx context.Context, conn *pgx.Conn, d pgx.TraceBatchEndData) {
	t.end(ctx, conn, nil, d.Err)
}

// TraceCopyFromStart implements pgx.CopyFromTracer.
func (t pgxTracer) TraceCopyFromStart(ctx context.Context, conn *pgx.Conn, d pgx.TraceCopyFromStartData) context.Context {
	query := "COPY " + d.TableName.Sanitize() + " (" + strings.Join(d.ColumnNames, ", ") + ") FROM STDIN"
	return t.start(ctx, conn, sqlhook.Exec, query, nil)
}

// TraceCopyFromEnd implements pgx.CopyFromTracer.
func (t pgxTracer) TraceCopyFromEnd(ctx context.Context, conn *pgx.Conn, d pgx.TraceCopyFromEndData) {
	t.end(ctx, conn, &d.CommandTag, d.Err)
}

// TracePrepareStart implements pgx.PrepareTracer. A prepare is no
// scheduling point: pgx prepares each new statement before its first run
// (its statement cache), a round trip that reads the catalog and takes no
// lock a worker could meet; the statement's run is the point.
func (pgxTracer) TracePrepareStart(ctx context.Context, _ *pgx.Conn, _ pgx.TracePrepareStartData) context.Context {
	return ctx
}

// TracePrepareEnd implements pgx.PrepareTracer.
func (pgxTracer) TracePrepareEnd(context.Context, *pgx.Conn, pgx.TracePrepareEndData) {}
