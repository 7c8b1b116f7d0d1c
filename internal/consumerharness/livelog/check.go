package livelog

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"

	"github.com/idemcheck/idemcheck/internal/consumerharness"
)

// Options bound a live campaign.
type Options struct {
	// Runs is how many scenarios are played (0: 3).
	Runs int
	// Seed draws the scenarios: run i plays the scenario of seed Seed+i.
	Seed uint64
	// Workers, Partitions and Events size each scenario (0: 2, 2, 6);
	// Faults is how many faults each has (0: none).
	Workers, Partitions, Events, Faults int
	// Confirm is how many times a breach is played again to confirm it
	// (0: 3).
	Confirm int
}

// Result is a live campaign's verdict.
type Result struct {
	// Runs counts the scenarios played, replays to confirm excluded.
	Runs int
	// Failed says a breach was confirmed: a replay of its scenario broke
	// the same law again. Law is the first law broken, Breaches the
	// confirming run's, Seed and Scenario what drew and played it, Run
	// its record.
	Failed   bool
	Law      string
	Breaches []consumerharness.Breach
	Seed     uint64
	Scenario *consumerharness.Scenario
	Run      *Run
	// Unconfirmed are the breaches no replay reproduced: the broker's
	// timing, not a verdict.
	Unconfirmed []consumerharness.Breach
	// Deliveries, Commits and Fenced sum the runs' counts.
	Deliveries, Commits, Fenced int
}

// Draw is the scenario of seed: o.Events events of four users, keyed
// and partitioned as the in-memory log broker does, and o.Faults faults
// drawn among crash, rebalance and replay.
func Draw(seed uint64, o Options) *consumerharness.Scenario {
	o = o.defaults()
	r := rand.New(rand.NewPCG(seed, 0x1d3c))
	s := &consumerharness.Scenario{Version: 1, Workers: o.Workers, Partitions: o.Partitions}
	for i := range o.Events {
		s.Events = append(s.Events, consumerharness.Event{ID: fmt.Sprintf("e%d", i+1),
			User: fmt.Sprintf("u%d", r.IntN(4)+1), Amount: int64(100 * (r.IntN(9) + 1))})
	}
	ops := []consumerharness.StepOp{consumerharness.OpCrash, consumerharness.OpRebalance, consumerharness.OpRebalance, consumerharness.OpReplay}
	for range o.Faults {
		s.Steps = append(s.Steps, consumerharness.Step{Op: ops[r.IntN(len(ops))], Worker: r.IntN(o.Workers) + 1})
	}
	return s
}

func (o Options) defaults() Options {
	if o.Runs <= 0 {
		o.Runs = 3
	}
	if o.Workers <= 0 {
		o.Workers = 2
	}
	if o.Partitions <= 0 {
		o.Partitions = 2
	}
	if o.Events <= 0 {
		o.Events = 6
	}
	if o.Confirm <= 0 {
		o.Confirm = 3
	}
	return o
}

// Check plays o.Runs scenarios live and stops at the first breach a
// replay of its scenario confirms; a breach that no replay reproduces is
// kept in Unconfirmed and the campaign goes on.
func Check(ctx context.Context, c consumerharness.Consumer, o Options) (Result, error) {
	o = o.defaults()
	var res Result
	for i := range o.Runs {
		seed := o.Seed + uint64(i)
		s := Draw(seed, o)
		run, err := Play(ctx, c, s)
		if err != nil {
			return res, err
		}
		res.Runs++
		res.add(run)
		if len(run.Breaches) == 0 {
			continue
		}
		law := run.Breaches[0].Law
		confirmed := false
		for range o.Confirm {
			again, err := Play(ctx, c, s)
			if err != nil {
				return res, err
			}
			res.add(again)
			if slices.ContainsFunc(again.Breaches, func(b consumerharness.Breach) bool { return b.Law == law }) {
				res.Failed, res.Law, res.Breaches, res.Seed, res.Scenario, res.Run = true, law, again.Breaches, seed, s, again
				confirmed = true
				break
			}
		}
		if confirmed {
			return res, nil
		}
		res.Unconfirmed = append(res.Unconfirmed, run.Breaches...)
	}
	return res, nil
}

func (r *Result) add(run *Run) {
	r.Deliveries += run.Deliveries
	r.Commits += run.Commits
	r.Fenced += run.Fenced
}
