package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/idemcheck/idemcheck/impl/adapter/consumerproc"
	"github.com/idemcheck/idemcheck/impl/system/procresolve"
	"github.com/idemcheck/idemcheck/internal/consumerharness"
)

func init() {
	registerConsumerScheme("exec", "a process in any language speaking the consumer protocol (impl/adapter/consumerproc/PROTOCOL.md); its hello declares its schema and effects query",
		resolveExecConsumer)
}

// resolveExecConsumer starts the command once to read what it declares in
// its hello (schema, effects query, dedupe query), and returns a consumer
// that runs one process per worker from a pool (consumerproc.Pool), which
// the returned Closer kills. A command that cannot start, fails the
// handshake or declares no effects query is an error, which fuzzrun
// consumer reports as a usage error.
func resolveExecConsumer(arg string) (consumerharness.Consumer, io.Closer, error) {
	argv, err := consumerproc.ParseCommand(arg)
	if err != nil {
		return consumerharness.Consumer{}, nil, err
	}
	opts := consumerproc.Options{}
	if v := os.Getenv(procresolve.ExecTimeoutEnv); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return consumerharness.Consumer{}, nil, fmt.Errorf("%s=%q: want a positive Go duration such as 5s", procresolve.ExecTimeoutEnv, v)
		}
		opts.Timeout = d
	}
	pool := consumerproc.NewPool(argv, opts)
	// A scenario has at most three workers: started together with the
	// one that declares, processes that declare reset serve them all from
	// the first scenario on.
	pool.Warm(3)
	d, err := pool.Declare()
	if err != nil {
		pool.Close()
		return consumerharness.Consumer{}, nil, err
	}
	if d.Effects == "" {
		pool.Close()
		return consumerharness.Consumer{}, nil, fmt.Errorf("%q declares no effects query in its hello (the \"effects\" field): the harness cannot judge what it did", arg)
	}
	effects := consumerharness.PerEvent(d.Effects)
	if d.Aggregate {
		effects = consumerharness.Aggregate(d.Effects)
	}
	c := consumerharness.Consumer{Schema: d.Schema, Worker: pool.Worker, Effects: effects, Dedupe: d.Dedupe}
	return c, &execConsumer{pool: pool, argv: argv, opts: opts, resets: d.Resets}, nil
}

// execConsumer is what an exec: consumer leaves to close: its pool.
type execConsumer struct {
	pool   *consumerproc.Pool
	argv   []string
	opts   consumerproc.Options
	resets bool
}

func (e *execConsumer) Close() error { return e.pool.Close() }

// resetChecker is a consumer's Closer that can check, before a campaign,
// that the consumer's processes forget everything on a reset.
type resetChecker interface {
	checkReset(c consumerharness.Consumer, opts []consumerharness.Option) error
}

// errKeepsState is the error of a process that declares reset and keeps
// something across it.
var errKeepsState = errors.New("a process keeps state across reset")

// resetProbes is how many drawn scenarios checkReset plays.
const resetProbes = 3

// checkReset guards the verdicts of a campaign against a process that
// declares reset and keeps something anyway (a cache its reset hook
// forgets): such a process plays a scenario differently once it has
// played another. Each of the first drawn scenarios is played twice on the
// pool, the second time on processes that played it already (the first
// scenario's first play is on processes that never played). Plays that
// differ are played again twice on fresh processes: if those agree, the
// pool's differ from them, and that is an error naming the first line
// that differs; if those differ too, the consumer is not deterministic
// (it reads the machine's clock, say), reset cannot be told apart, and it
// passes.
func (e *execConsumer) checkReset(c consumerharness.Consumer, opts []consumerharness.Option) error {
	if !e.resets {
		return nil
	}
	play := func(c consumerharness.Consumer, s *consumerharness.Scenario) ([]string, error) {
		res, err := consumerharness.Replay(c, s, opts...)
		if err != nil {
			return nil, err
		}
		return res.Outcome.Trace.Lines(), nil
	}
	twice := func(c consumerharness.Consumer, s *consumerharness.Scenario) (a, b []string, err error) {
		if a, err = play(c, s); err == nil {
			b, err = play(c, s)
		}
		return a, b, err
	}
	gen := consumerharness.Generator(16)
	for i := range resetProbes {
		s := gen.Example(i)
		p1, p2, err := twice(c, s)
		if err != nil {
			return err
		}
		if slices.Equal(p1, p2) {
			continue
		}
		freshOpts := e.opts
		freshOpts.MaxIdle = -1
		fresh := consumerproc.NewPool(e.argv, freshOpts)
		fc := c
		fc.Worker = fresh.Worker
		f1, f2, err := twice(fc, s)
		fresh.Close()
		if err != nil {
			return err
		}
		if !slices.Equal(f1, f2) {
			return nil // not deterministic: reset cannot be told apart
		}
		reused := p1
		if slices.Equal(f1, p1) {
			reused = p2
		}
		return fmt.Errorf("%w: %q declares reset in its hello, but a process reused after a reset plays a scenario differently from a fresh one (its reset must drop every piece of state, see the protocol's reset); first difference: %s", errKeepsState, strings.Join(e.argv, " "), consumerharness.FirstDifference("fresh", f1, "reused", reused))
	}
	return nil
}
