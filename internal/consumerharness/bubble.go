package consumerharness

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/idemcheck/idemcheck/internal/bubble"
)

// Every entry point (Check, Hunt, Replay, and so cmd/fuzzrun and corpus
// replay) plays each scenario in a testing/synctest bubble of its own, so
// that the handler's time.Now and timers read the scenario's clock. The
// bubbles come from package internal/bubble, which obtains a *testing.T
// of its own; Check falls back on its test's T when that package cannot
// make one (a test binary before m.Run). Without any bubble the scenario
// plays on the machine's clock, and the outcome says so (MachineClock).

// guard watches, on the machine's clock and from outside the bubble, a
// scenario that plays in one. Inside the bubble, the run's watchdog runs
// on the bubble's clock, which stands still while a goroutine of the
// bubble is blocked on something outside it (I/O, a mutex, a channel made
// outside the run): only a watcher outside can see that hang, and since
// nothing outside a bubble may wake a goroutine blocked inside it, the
// guard gives the run up instead (see playScenario).
type guard struct {
	// progress moves with every event of the run and every phase it
	// enters; phase is the phase.
	progress atomic.Int64
	phase    atomic.Int32
	// trace is the run's trace, copied when the run is given up.
	trace atomic.Pointer[Trace]

	mu    sync.Mutex
	conns []conns
}

// enter marks a phase of the run.
func (g *guard) enter(p runPhase) {
	if g == nil {
		return
	}
	g.phase.Store(int32(p))
	g.progress.Add(1)
}

// connector records a worker's connector, killed if the run is given up.
func (g *guard) connector(c conns) {
	if g == nil {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.conns = append(g.conns, c)
}

// killAll closes every connection of the run given up, so that its open
// transactions (and their locks) do not outlive it.
func (g *guard) killAll() {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, c := range g.conns {
		c.Kill()
	}
}

// runPhase is what a run is doing, for a guard's report.
type runPhase int32

const (
	phaseStarting runPhase = iota
	phaseScheduling
	phaseWaiting
	phaseJudging
	phaseClosing
)

var phaseNames = map[runPhase]string{
	phaseStarting: "preparing the database", phaseScheduling: "scheduling",
	phaseWaiting: "waiting for a worker", phaseJudging: "reading the effects", phaseClosing: "stopping the workers",
}

// playScenario plays s in a bubble of its own when one can be had, on the
// machine's clock otherwise. ctx carries what the run reads of its
// caller (a model checker's choices, say).
func playScenario(ctx context.Context, c Consumer, s *Scenario, cfg config) (*Outcome, error) {
	g := &guard{}
	var out *Outcome
	var err error
	f := func() {
		growStack(0)
		out, err = play(ctx, cfg.backend, c, s, g, true)
	}
	done := make(chan error, 1)
	go func() {
		// A bubble under Check's own T whose test fails ends this
		// goroutine (FailNow): the deferred send still tells.
		berr := errors.New("the bubble's test failed (was a race detected while it ran?)")
		defer func() { done <- berr }()
		berr = runInBubble(cfg, f)
	}()
	tick := time.NewTicker(hangAfter / 4)
	defer tick.Stop()
	last, stale := g.progress.Load(), 0
	for {
		select {
		case berr := <-done:
			var un *bubble.Unavailable
			if errors.As(berr, &un) {
				// No bubble: the machine's clock, and the outcome says so.
				out, err = play(ctx, cfg.backend, c, s, nil, false)
				if out != nil {
					out.noteMachineClock("the handler's time.Now and timers: " + un.Error())
				}
				return out, err
			}
			var p *bubble.Panic
			if errors.As(berr, &p) && out != nil && strings.Contains(fmt.Sprint(p.Value), "blocked goroutines remain") {
				// Goroutines left blocked make the bubble panic as it
				// ends: the consumer's or its libraries' (tolerated when
				// the team says why), or database/sql's watchers of a
				// transaction or rows the handler left open.
				if out.Failure == nil && c.Lingering == "" {
					b := breach(LawRuns, "handler-goroutines", "goroutines were left blocked when the scenario ended: database/sql's watchers of a transaction or rows the handler left open")
					if n, origin, stack := leaked(out.runID); n > 0 {
						b = leakBreach(n, origin, stack)
					}
					out.Failure = &b
				}
				berr = nil
			}
			if berr != nil {
				if p != nil {
					panic(fmt.Sprintf("consumertest: %v\n%s", p.Value, p.Stack))
				}
				return nil, fmt.Errorf("consumertest: %w", berr)
			}
			return out, err
		case <-tick.C:
		}
		if now := g.progress.Load(); now != last {
			last, stale = now, 0
			continue
		}
		if stale++; stale < 4 {
			continue
		}
		return g.givenUp(s, cfg), nil
	}
}

// givenUp is the outcome of a run that made no progress for hangAfter on
// the machine's clock: its connections are killed, and its goroutines are
// left to end when whatever blocks them does.
func (g *guard) givenUp(s *Scenario, cfg config) *Outcome {
	g.killAll()
	phase := runPhase(g.phase.Load())
	out := &Outcome{Scenario: s, Backend: cfg.backend.Name(), Trace: &Trace{}}
	if tr := g.trace.Load(); tr != nil {
		out.Trace = tr.clone()
	}
	var b Breach
	switch phase {
	case phaseWaiting:
		b = breach(LawRuns, "handler-hangs", fmt.Sprintf("a worker ran for %s of the machine's time without reaching a database call, a handler.Point or its return: it blocks on something outside the harness's control (I/O, a mutex, a channel made outside the run)", hangAfter))
	case phaseClosing:
		b = breach(LawRuns, "handler-goroutines", fmt.Sprintf("after the scenario ended, a goroutine the handler started was still blocked on something outside the harness's control (I/O, a mutex, a channel made outside the run) %s later", hangAfter))
	default:
		b = breach(LawRuns, "handler-hangs", fmt.Sprintf("the run made no progress for %s of the machine's time while %s", hangAfter, phaseNames[phase]))
	}
	out.Failure = &b
	return out
}

// runInBubble runs f in a bubble: one of package bubble's, or, for Check
// when that package has none, one under Check's own T.
func runInBubble(cfg config, f func()) error {
	if cfg.noBubble {
		return &bubble.Unavailable{Reason: "switched off"}
	}
	err := bubble.Run(f)
	var un *bubble.Unavailable
	if !errors.As(err, &un) || cfg.t == nil {
		return err
	}
	var perr error
	func() {
		defer func() {
			if p := recover(); p != nil {
				perr = &bubble.Panic{Value: p} // goroutines left blocked
			}
		}()
		synctest.Test(cfg.t, func(*testing.T) {
			defer func() {
				if p := recover(); p != nil {
					perr = &bubble.Panic{Value: p, Stack: string(debug.Stack())}
				}
			}()
			f()
		})
	}()
	return perr
}
