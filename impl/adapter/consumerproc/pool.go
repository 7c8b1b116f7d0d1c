package consumerproc

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/idemcheck/idemcheck/impl/adapter/internal/lineproc"
	"github.com/idemcheck/idemcheck/impl/contract/handler"
	"github.com/idemcheck/idemcheck/internal/outside"
)

// A delivery may run inside a testing/synctest bubble (consumertest.Check
// plays each scenario in one, so that the handler's clock is the
// scenario's). The process's machinery must not: a goroutine waiting on a
// pipe is never "durably blocked", so a bubble holding the reader of an
// idle process could never move its clock, and a timeout measured on the
// bubble's clock would never expire while the process hangs. So the
// process is started, read, timed (its watchdog) and killed by goroutines
// started from one goroutine that lives outside every bubble, reached
// through channels made outside every bubble (at package initialisation);
// the caller of a round trip only writes the line and waits on channels
// made outside (lineproc.Exchange), and pooled processes outlive the
// bubble of the scenario that started them (see internal/outside).

// watchTicks is how many times per timeout a process's watchdog looks at
// the round trip in flight: a hang is reported at most an eighth of the
// timeout late.
const watchTicks = 8

// idleTimeout is how long a process may wait in the pool unused before it
// is killed: far longer than the gap between two scenarios of a run.
const idleTimeout = 5 * time.Second

// spareName is the worker a spare of a process that declares reset is
// started for: its reset names the worker it serves.
const spareName = "spare"

// Pool runs a team's consumer command as the processes of its workers and
// keeps them between workers (see the package documentation and
// PROTOCOL.md). Its Worker method is the handler.Worker of a
// consumertest.Consumer; Close kills every process. A Pool is safe for
// concurrent use, and may be used from inside testing/synctest bubbles: its
// processes, pipes and timers belong to no bubble.
type Pool struct {
	argv    []string
	command string
	opts    Options

	mu        sync.Mutex
	failed    error // the first failure of a process, for good
	closed    bool
	known     bool                // a process answered its hello
	resetting bool                // the last one to answer declared reset
	idle      []*proc             // processes that declared reset and served a worker, waiting for the next
	fresh     []*proc             // processes that declared reset and never served a worker
	pending   []*spare            // spares of processes that declare reset, being started
	spares    map[string][]*spare // spares of processes that do not, by worker name
	asked     map[string]int      // how often each worker name was asked for
	nSpares   int                 // in pending and spares
	workers   map[*worker]bool    // the workers being served
	timer     *time.Timer         // the reaper; made outside any bubble
	armed     bool
	stats     Stats
	// freshPool serves FreshWorker: processes of the same command that
	// serve one worker each, made when first asked for, closed with this
	// pool.
	freshPool *Pool
}

// Stats count what a Pool did.
type Stats struct {
	// Started counts the processes started.
	Started int
	// Reused counts the workers given a process that had served another
	// worker (it declared reset, and was reset for the new one).
	Reused int
	// Spares counts the workers given a process started ahead, in the
	// background or by Declare.
	Spares int
	// Waiting counts the processes waiting for a worker now, those being
	// started ahead included.
	Waiting int
}

// proc is one started process, after its hello.
type proc struct {
	p     *lineproc.Proc
	hello request
	stale bool // idle since the reaper last looked
}

func (pr *proc) resets() bool { return pr.hello.Reset }
func (pr *proc) version() int { return *pr.hello.Protocol }
func (pr *proc) kill()        { <-outside.Go(pr.p.Kill) }

// spare is a process started ahead.
type spare struct {
	ready chan struct{} // closed once the start ended; made outside any bubble
	pr    *proc         // its final value is set before ready closes
	err   error         // why its start failed, set before ready closes
	taken bool          // a worker waits for it
	stale bool
}

// NewPool returns a pool that runs command (command[0] looked up in PATH)
// with opts. It starts nothing until a worker or Declare asks.
func NewPool(command []string, opts Options) *Pool {
	argv := append([]string(nil), command...)
	return &Pool{argv: argv, command: strings.Join(argv, " "), opts: opts.withDefaults(),
		spares: map[string][]*spare{}, asked: map[string]int{}, workers: map[*worker]bool{}}
}

// Worker is a handler.Worker: it gives worker id a process, from the pool
// or started now, and returns the Func that hands it deliveries and the
// Closer that gives it back. A process that cannot start, or fails its
// reset, is an *Error, and so is every later call once one has failed.
func (pl *Pool) Worker(id string, _ *sql.DB) (handler.Func, io.Closer, error) {
	if len(pl.argv) == 0 {
		return nil, nil, &Error{Command: pl.command, Worker: id, Request: "start", Reason: "no command"}
	}
	if err := pl.usable(); err != nil {
		return nil, nil, err
	}
	pr, err := pl.take(id)
	if err != nil {
		return nil, nil, err
	}
	w := &worker{pool: pl, id: id, pr: pr, version: pr.version()}
	pl.mu.Lock()
	closed := pl.closed
	if !closed {
		pl.workers[w] = true
	}
	pl.mu.Unlock()
	if closed {
		pr.kill()
		return nil, nil, pl.usable()
	}
	if pr.resets() {
		if err := w.reset(); err != nil {
			return nil, nil, err
		}
	}
	return w.handle, w, nil
}

// freshWorker is the Worker of a pool of the same command that reuses no
// process (see handler.FreshWorkers), or nil when this pool reuses none
// either (its processes do not declare reset, or it keeps none idle).
func (pl *Pool) freshWorker() handler.Worker {
	pl.mu.Lock()
	defer pl.mu.Unlock()
	if pl.opts.MaxIdle < 0 || !pl.resetting || pl.closed {
		return nil
	}
	if pl.freshPool == nil {
		opts := pl.opts
		opts.MaxIdle = -1
		pl.freshPool = NewPool(pl.argv, opts)
	}
	return pl.freshPool.Worker
}

// Declare returns what the command's processes declare in their hello
// (see Declaration), starting one if none waits; a process that declared
// reset stays in the pool for the first worker.
func (pl *Pool) Declare() (Declaration, error) {
	if len(pl.argv) == 0 {
		return Declaration{}, &Error{Command: pl.command, Worker: "declare", Request: "start", Reason: "no command"}
	}
	if err := pl.usable(); err != nil {
		return Declaration{}, err
	}
	pl.mu.Lock()
	for _, q := range [][]*proc{pl.fresh, pl.idle} {
		if len(q) > 0 {
			h := q[0].hello
			pl.mu.Unlock()
			return declaration(h), nil
		}
	}
	var s *spare
	if len(pl.pending) > 0 {
		s, pl.pending = pl.pending[0], pl.pending[1:]
		s.taken = true
		pl.nSpares--
	}
	pl.mu.Unlock()
	var pr *proc
	if s != nil {
		<-s.ready // started by Warm
		if s.err != nil {
			pl.failWith(s.err)
			return Declaration{}, s.err
		}
		pr = s.pr
	}
	if pr == nil {
		var err error
		if pr, err = pl.start("declare"); err != nil {
			pl.failWith(err)
			return Declaration{}, err
		}
	}
	pl.mu.Lock()
	keep := pr.resets() && !pl.closed && pl.waitingLocked() < pl.opts.MaxIdle
	if keep {
		pl.fresh = append(pl.fresh, pr)
		pl.armLocked()
	}
	pl.mu.Unlock()
	if !keep {
		pr.kill()
	}
	return declaration(pr.hello), nil
}

// Warm starts processes in the background until n of them wait for
// workers (within MaxIdle), so that the first workers do not wait for
// starts either. Before any process answered its hello it does so on the
// chance that they declare reset (a spare that does not is killed: a spare
// of such a process is started for one worker name); after, only if they
// do. Called before Declare, it overlaps the starts with Declare's.
func (pl *Pool) Warm(n int) {
	pl.mu.Lock()
	k := n - len(pl.idle) - len(pl.fresh) - len(pl.pending)
	if pl.known && !pl.resetting {
		k = 0
	}
	pl.mu.Unlock()
	for range k {
		pl.startSpare(spareName, true)
	}
}

// Stats returns what the pool did so far.
func (pl *Pool) Stats() Stats {
	pl.mu.Lock()
	defer pl.mu.Unlock()
	st := pl.stats
	st.Waiting = pl.waitingLocked()
	return st
}

// waitingLocked counts the processes waiting for a worker, or being
// started ahead for one.
func (pl *Pool) waitingLocked() int { return len(pl.idle) + len(pl.fresh) + pl.nSpares }

// Close kills every process of the pool: those waiting, those starting,
// and those of workers still being served (their next delivery fails with
// an *Error). Later calls of Worker fail.
func (pl *Pool) Close() error {
	pl.mu.Lock()
	if pl.closed {
		pl.mu.Unlock()
		return nil
	}
	pl.closed = true
	idle := append(pl.idle, pl.fresh...)
	pl.idle, pl.fresh = nil, nil
	spares := pl.pending
	for _, q := range pl.spares {
		spares = append(spares, q...)
	}
	pl.pending, pl.spares, pl.nSpares = nil, map[string][]*spare{}, 0
	var workers []*worker
	for w := range pl.workers {
		workers = append(workers, w)
	}
	timer := pl.timer
	fresh := pl.freshPool
	pl.mu.Unlock()
	if timer != nil {
		outside.Do(func() { timer.Stop() })
	}
	if fresh != nil {
		fresh.Close()
	}
	for _, w := range workers {
		w.abandon(&Error{Command: pl.command, Worker: w.id, Request: "a delivery after the pool was closed", Reason: "the pool was closed"})
	}
	for _, pr := range idle {
		pr.kill()
	}
	for _, s := range spares {
		<-s.ready
		if s.pr != nil {
			s.pr.kill()
		}
	}
	return nil
}

// usable reports why no worker may start: an earlier failure, or Close.
func (pl *Pool) usable() error {
	pl.mu.Lock()
	defer pl.mu.Unlock()
	if pl.failed != nil {
		return fmt.Errorf("consumerproc: not starting %q again after an earlier process failed: %w", pl.command, pl.failed)
	}
	if pl.closed {
		return fmt.Errorf("consumerproc: the pool of %q is closed", pl.command)
	}
	return nil
}

// failWith records the first failure of a process: no worker starts again.
func (pl *Pool) failWith(err error) {
	pl.mu.Lock()
	defer pl.mu.Unlock()
	if pl.failed == nil {
		pl.failed = err
	}
}

// take finds worker id a process: one waiting to be reset, a spare being
// started, or one started now; then it starts a spare ahead for the next.
func (pl *Pool) take(id string) (*proc, error) {
	pl.mu.Lock()
	if len(pl.idle) > 0 {
		// First in, first out: the harness stops its workers in the
		// order it started them, so each worker of the next scenario
		// gets the process the same worker had, and a process that
		// ignores reset replays a scenario differently.
		pr := pl.idle[0]
		pl.idle = pl.idle[1:]
		pl.stats.Reused++
		pl.mu.Unlock()
		pl.spareAhead(id, pr)
		return pr, nil
	}
	if len(pl.fresh) > 0 {
		pr := pl.fresh[0]
		pl.fresh = pl.fresh[1:]
		pl.stats.Spares++
		pl.mu.Unlock()
		pl.spareAhead(id, pr)
		return pr, nil
	}
	var s *spare
	switch q := pl.spares[id]; {
	case len(pl.pending) > 0:
		s, pl.pending = pl.pending[0], pl.pending[1:]
	case len(q) > 0:
		if s, pl.spares[id] = q[0], q[1:]; len(q) == 1 {
			delete(pl.spares, id)
		}
	}
	if s != nil {
		s.taken = true
		pl.nSpares--
	}
	pl.mu.Unlock()
	if s != nil {
		<-s.ready
		if s.err != nil {
			// Started for this worker, or for any: its failure is
			// this worker's, and the command's.
			pl.failWith(s.err)
			return nil, s.err
		}
		if pr := s.pr; pr != nil {
			pl.mu.Lock()
			pl.stats.Spares++
			pl.mu.Unlock()
			pl.spareAhead(id, pr)
			return pr, nil
		}
		// Killed: a spare that turned out not to reset.
	}
	pr, err := pl.start(id)
	if err != nil {
		pl.failWith(err)
		return nil, err
	}
	pl.spareAhead(id, pr)
	return pr, nil
}

// maxAsked bounds the worker names a pool remembers.
const maxAsked = 1024

// spareAhead starts a spare for the worker after id, which got pr: for a
// process that declares reset, one for any worker unless one waits
// already; for one that does not, one for the next worker named id, if id
// was asked for before (a harness that names its workers anew each time
// would only leave spares to the reaper).
func (pl *Pool) spareAhead(id string, pr *proc) {
	if !pr.resets() {
		pl.mu.Lock()
		if len(pl.asked) >= maxAsked {
			clear(pl.asked)
		}
		pl.asked[id]++
		again := pl.asked[id] > 1
		pl.mu.Unlock()
		if again {
			pl.startSpare(id, false)
		}
		return
	}
	pl.mu.Lock()
	none := len(pl.idle)+len(pl.fresh)+len(pl.pending) == 0
	pl.mu.Unlock()
	if none {
		pl.startSpare(spareName, true)
	}
}

// start launches a process for worker name and performs the handshake. A
// failure is an *Error; the process is killed.
func (pl *Pool) start(name string) (*proc, error) {
	env := append(append(os.Environ(), pl.opts.Env...), WorkerEnv+"="+name)
	what := fmt.Sprintf("hello (the handshake, protocol versions %d to %d)", MinVersion, Version)
	failed := func(reason error) error {
		return &Error{Command: pl.command, Worker: name, Request: what, Reason: reason.Error()}
	}
	var p *lineproc.Proc
	var err error
	// Started from outside any bubble, so are its reader, its waiter and
	// its watchdog.
	outside.Do(func() {
		if p, err = lineproc.Start(pl.argv, pl.opts.Dir, env); err == nil {
			p.Watch(min(pl.opts.Timeout, pl.opts.StartTimeout) / watchTicks)
		}
	})
	if err != nil {
		return nil, failed(fmt.Errorf("could not start: %w", err))
	}
	pl.mu.Lock()
	pl.stats.Started++
	pl.mu.Unlock()
	line := marshal(map[string]any{"type": TypeHello, "protocol": Version, "worker": name})
	ans, err := p.Exchange(context.Background(), line, pl.opts.StartTimeout)
	if err == nil {
		var h request
		if h, err = parse(ans, 0); err == nil {
			pl.mu.Lock()
			pl.known, pl.resetting = true, h.Reset
			pl.mu.Unlock()
			return &proc{p: p, hello: h}, nil
		}
	}
	err = p.WithStderr(err)
	<-outside.Go(p.Kill)
	return nil, failed(err)
}

// startSpare starts a process in the background, if the pool has room: for
// any worker when resets (it joins the idle ones once started), else for
// the next worker named name.
func (pl *Pool) startSpare(name string, resets bool) {
	var ready chan struct{}
	outside.Do(func() { ready = make(chan struct{}) })
	s := &spare{ready: ready}
	pl.mu.Lock()
	if pl.closed || pl.failed != nil || pl.waitingLocked() >= pl.opts.MaxIdle {
		pl.mu.Unlock()
		return
	}
	if resets {
		pl.pending = append(pl.pending, s)
	} else {
		pl.spares[name] = append(pl.spares[name], s)
	}
	pl.nSpares++
	pl.armLocked()
	pl.mu.Unlock()
	outside.Go(func() {
		pr, err := pl.start(name)
		var dead *proc
		pl.mu.Lock()
		s.err = err
		if resets && !s.taken {
			// Nobody waits for it: it joins the fresh ones.
			pl.pending = slices.DeleteFunc(pl.pending, func(o *spare) bool { return o == s })
			pl.nSpares--
			switch {
			case pr == nil:
			case pl.closed || !pr.resets() || pl.waitingLocked() >= pl.opts.MaxIdle:
				dead = pr
			default:
				pl.fresh = append(pl.fresh, pr)
			}
			pr = nil
		}
		s.pr = pr
		pl.mu.Unlock()
		close(ready)
		if dead != nil {
			dead.kill()
		}
	})
}

// release takes back w's process: a process that declared reset and waits
// for its next line (reusable) joins the idle ones if there is room; any
// other is killed.
func (pl *Pool) release(w *worker, pr *proc, reusable bool) {
	pl.mu.Lock()
	delete(pl.workers, w)
	if pr == nil {
		pl.mu.Unlock()
		return
	}
	if reusable && pr.resets() && !pl.closed && pl.failed == nil && pl.waitingLocked() < pl.opts.MaxIdle {
		pr.stale = false
		pl.idle = append(pl.idle, pr)
		pl.armLocked()
		pl.mu.Unlock()
		return
	}
	pl.mu.Unlock()
	pr.kill()
}

// armLocked makes sure the reaper will look at the idle processes.
func (pl *Pool) armLocked() {
	if pl.armed {
		return
	}
	pl.armed = true
	outside.Do(func() {
		if pl.timer == nil {
			pl.timer = time.AfterFunc(idleTimeout, pl.reap)
		} else {
			pl.timer.Reset(idleTimeout)
		}
	})
}

// reap kills the processes that stayed idle since its last look, and
// looks again later while any is left.
func (pl *Pool) reap() {
	pl.mu.Lock()
	var dead []*proc
	for _, q := range []*[]*proc{&pl.idle, &pl.fresh} {
		keep := (*q)[:0]
		for _, pr := range *q {
			if pr.stale {
				dead = append(dead, pr)
				continue
			}
			pr.stale = true
			keep = append(keep, pr)
		}
		*q = keep
	}
	for id, q := range pl.spares {
		kept := q[:0]
		for _, s := range q {
			select {
			case <-s.ready:
			default:
				kept = append(kept, s) // still starting
				continue
			}
			switch {
			case s.pr == nil:
				pl.nSpares--
			case s.stale:
				dead = append(dead, s.pr)
				pl.nSpares--
			default:
				s.stale = true
				kept = append(kept, s)
			}
		}
		if pl.spares[id] = kept; len(kept) == 0 {
			delete(pl.spares, id)
		}
	}
	if pl.waitingLocked() > 0 && !pl.closed {
		pl.timer.Reset(idleTimeout)
	} else {
		pl.armed = false
	}
	pl.mu.Unlock()
	for _, pr := range dead {
		pr.kill()
	}
}
