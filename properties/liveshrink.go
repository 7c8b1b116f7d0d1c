package properties

import (
	"context"
	"slices"

	"github.com/idemcheck/idemcheck/faults/runner"
	"github.com/idemcheck/idemcheck/faults/scenario"
)

// ShrinkLive makes a confirmed live counterexample smaller: it drops one
// step, then one event (with the steps that name it), at a time, and keeps
// each smaller scenario that still breaks the invariant in one of up to
// ConfirmRuns runs — the same standard a failure is confirmed by. Real
// time is in every run, so this is a greedy pass, not rapid's shrinking.
// It returns the smallest scenario found and what broke in its last run
// ("" when nothing smaller broke it).
func ShrinkLive(ctx context.Context, c LiveCampaign, sc *scenario.Live, invariant string) (*scenario.Live, string, error) {
	opts := runner.LiveOptions{DrainLimit: c.DrainLimit}
	detail := ""
	try := func(cand *scenario.Live) (bool, error) {
		if cand.Validate() != nil {
			return false, nil
		}
		ok, d, err := confirm(ctx, c, cand, invariant, opts)
		if ok {
			detail = d
		}
		return ok, err
	}
	best := sc
	for i := len(best.Steps) - 1; i >= 0; i-- {
		cand := clone(best)
		cand.Steps = slices.Delete(cand.Steps, i, i+1)
		ok, err := try(cand)
		if err != nil {
			return best, detail, err
		}
		if ok {
			best = cand
		}
	}
	for e := len(best.Events) - 1; e >= 0 && len(best.Events) > 1; e-- {
		cand := withoutEvent(best, e)
		ok, err := try(cand)
		if err != nil {
			return best, detail, err
		}
		if ok {
			best = cand
		}
	}
	return best, detail, nil
}

func clone(sc *scenario.Live) *scenario.Live {
	c := *sc
	c.Consumers = slices.Clone(sc.Consumers)
	c.Events = slices.Clone(sc.Events)
	c.Steps = slices.Clone(sc.Steps)
	return &c
}

// withoutEvent drops event e and the steps that name it, renumbering the
// later events' steps.
func withoutEvent(sc *scenario.Live, e int) *scenario.Live {
	c := clone(sc)
	c.Events = slices.Delete(c.Events, e, e+1)
	var steps []scenario.LiveStep
	for _, st := range c.Steps {
		names := st.Op == scenario.LiveProduce || st.Op == scenario.LiveRetry
		switch {
		case names && st.Event == e:
			continue
		case names && st.Event > e:
			st.Event--
		}
		steps = append(steps, st)
	}
	c.Steps = steps
	return c
}
