package livelog

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/idemcheck/idemcheck/internal/consumerharness"
)

// Options bound a live campaign.
type Options struct {
	// Runs is how many scenarios are played (0: 3).
	Runs int
	// Seed draws the scenarios: run i plays the scenario of seed Seed+i.
	Seed uint64
	// Workers, Partitions and Events size each scenario (0: 2, 2, 12);
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
// drawn among crash, rebalance, replay and fail.
func Draw(seed uint64, o Options) *consumerharness.Scenario {
	o = o.defaults()
	r := rand.New(rand.NewPCG(seed, 0x1d3c))
	s := &consumerharness.Scenario{Version: 1, Workers: o.Workers, Partitions: o.Partitions, Policy: consumerharness.DefaultPolicy}
	for i := range o.Events {
		s.Events = append(s.Events, consumerharness.Event{ID: fmt.Sprintf("e%d", i+1),
			User: fmt.Sprintf("u%d", r.IntN(4)+1), Amount: int64(100 * (r.IntN(9) + 1))})
	}
	ops := []consumerharness.StepOp{consumerharness.OpCrash, consumerharness.OpRebalance, consumerharness.OpRebalance, consumerharness.OpReplay,
		consumerharness.OpFail, consumerharness.OpFail}
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
		o.Events = 12
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
		// Each law the run broke is confirmed when a replay breaks it
		// again; the others stay unconfirmed.
		pending := run.Breaches
		for k := 0; k < o.Confirm && len(pending) > 0 && !res.Failed; k++ {
			again, err := Play(ctx, c, s)
			if err != nil {
				return res, err
			}
			res.add(again)
			var confirmed []consumerharness.Breach
			pending = slices.DeleteFunc(pending, func(b consumerharness.Breach) bool {
				if slices.ContainsFunc(again.Breaches, func(a consumerharness.Breach) bool { return a.Law == b.Law }) {
					confirmed = append(confirmed, b)
					return true
				}
				return false
			})
			if len(confirmed) > 0 {
				var breaches []consumerharness.Breach
				for _, a := range again.Breaches {
					if slices.ContainsFunc(confirmed, func(b consumerharness.Breach) bool { return a.Law == b.Law }) {
						breaches = append(breaches, a)
					}
				}
				res.Failed, res.Law, res.Breaches, res.Seed, res.Scenario, res.Run = true, breaches[0].Law, breaches, seed, s, again
			}
		}
		res.Unconfirmed = append(res.Unconfirmed, pending...)
		if res.Failed {
			return res, nil
		}
	}
	return res, nil
}

func (r *Result) add(run *Run) {
	r.Deliveries += run.Deliveries
	r.Commits += run.Commits
	r.Fenced += run.Fenced
}

// Report says the verdict for a person: the confirmed breach with the
// run that confirmed it, or the runs' counts and the breaches no replay
// reproduced.
func (r Result) Report() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d live run(s) on kfake: %d batches delivered, %d commits landed, %d fenced\n", r.Runs, r.Deliveries, r.Commits, r.Fenced)
	if r.Failed {
		for _, br := range r.Breaches {
			fmt.Fprintf(&b, "FAIL %s: %s (confirmed by a replay)\n", br.Law, br.Summary)
			for _, d := range br.Details {
				fmt.Fprintf(&b, "  - %s\n", d)
			}
		}
		fmt.Fprintf(&b, "seed %d; the confirming run:\n", r.Seed)
		for _, l := range r.Run.Lines {
			fmt.Fprintf(&b, "  %s\n", l)
		}
		return b.String()
	}
	b.WriteString("no law broken")
	if len(r.Unconfirmed) > 0 {
		fmt.Fprintf(&b, "; %d breach(es) unconfirmed (no replay reproduced them: the broker's timing, not a verdict):", len(r.Unconfirmed))
		for _, br := range r.Unconfirmed {
			fmt.Fprintf(&b, "\n  unconfirmed %s: %s", br.Law, strings.Join(br.Details, "; "))
		}
	}
	b.WriteString("\n")
	return b.String()
}
