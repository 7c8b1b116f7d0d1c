package consumerharness

import (
	"context"
	"time"
)

// VerifyOptions gather how Verify and Explore search, besides their
// Bounds: when they stop, how many walkers search at once, who hears of
// their progress, and the reductions a team may switch off to convince
// itself of a verdict. A zero field keeps the default.
type VerifyOptions struct {
	// Time stops the search after this long (VerifyTime): the result
	// says which preemption bound was fully explored by then.
	Time time.Duration
	// Schedules stops the search after this many schedules
	// (VerifySchedules).
	Schedules int64
	// Parallel is the number of goroutines searching at once, each on a
	// database of its own (VerifyParallel; default 1): the verdict and the
	// counterexample do not depend on it.
	Parallel int
	// Context stops the search when it is done (VerifyContext), as on
	// Ctrl-C.
	Context context.Context
	// Progress is called every 2,000 schedules with how far the search
	// is (OnVerifyProgress).
	Progress func(VerifyProgress)
	// NoCache explores again a state met again (NoCache), for a handler
	// that is not deterministic in what it is given and what it reads.
	NoCache bool
	// NoPOR tries every order of two independent choices (NoPOR).
	NoPOR bool
	// NoSymmetry names states with a Handler's workers in place
	// (NoSymmetry): states alike but for which worker is where are
	// explored each on its own.
	NoSymmetry bool
}

// VerifyWith sets how Verify and Explore search, in one option, so that
// the front door needs a single name for them. Only the fields that are
// not zero are set: an earlier option of the same kind stays when its
// field is left zero.
func VerifyWith(o VerifyOptions) Option {
	return func(c *config) {
		if o.Time != 0 {
			c.verify.timeBudget = o.Time
		}
		if o.Schedules != 0 {
			c.verify.maxSchedules = o.Schedules
		}
		if o.Parallel != 0 {
			c.verify.parallel = o.Parallel
		}
		if o.Context != nil {
			c.verify.ctx = o.Context
		}
		if o.Progress != nil {
			c.verify.progress = o.Progress
		}
		if o.NoCache {
			c.verify.noCache = true
		}
		if o.NoPOR {
			c.verify.noPOR = true
		}
		if o.NoSymmetry {
			c.verify.noSymmetry = true
		}
	}
}
