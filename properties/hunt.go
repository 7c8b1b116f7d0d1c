package properties

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/idemcheck/idemcheck/faults/gen"
	"github.com/idemcheck/idemcheck/faults/runner"
	"github.com/idemcheck/idemcheck/faults/scenario"
	"github.com/idemcheck/idemcheck/impl/system"
	"github.com/idemcheck/idemcheck/internal/hunt"
	"github.com/idemcheck/idemcheck/internal/machineclock"
	"github.com/idemcheck/idemcheck/properties/coverage"
)

// HuntOptions configure a Hunt.
type HuntOptions struct {
	// Kind of scenarios to draw.
	Kind scenario.Kind
	// Properties judge every run.
	Properties []Property
	// Laws narrows what counts as a failure to these laws ("property/law");
	// empty means every law of Properties.
	Laws []string
	// Off switches laws off ("property/law" → reason): they are judged by
	// nobody.
	Off map[string]string
	// Checks is the number of scenarios rapid draws before giving up.
	Checks int
	// Seed is rapid's starting seed; 0 draws a random one (rapid reports it).
	Seed uint64
	// Generator draws the scenarios; nil means gen.ForKind(Kind).
	Generator *rapid.Generator[*scenario.Scenario]
	// NoReduce skips the reduction pass after rapid's shrink.
	NoReduce bool
	// Coverage, when set, counts the situations every drawn scenario
	// reached (package coverage); rapid's shrinking and the reduction
	// pass are not counted.
	Coverage *coverage.Observer
	// T, when set, is the test in which every scenario of a target whose
	// store reads time.Now (system.WithTimeNowStore) plays in a
	// testing/synctest bubble of its own (see JudgeOptions.T). Without it
	// such a hunt must run inside the caller's own bubble.
	T *testing.T
}

// hunted reports whether a breach of law of property p counts as a failure.
func (o HuntOptions) hunted(p, law string) bool {
	id := ID(p, law)
	if _, off := o.Off[id]; off {
		return false
	}
	return len(o.Laws) == 0 || slices.Contains(o.Laws, id)
}

// HuntResult is what a Hunt found.
type HuntResult struct {
	Target string `json:"target"`
	// Failed is true when a scenario violated a hunted law.
	Failed bool `json:"failed"`
	// Checks is the number of scenarios drawn until the first failure (or all
	// of them when none failed).
	Checks int `json:"checks"`
	// Seed reproduces the failure with -rapid.seed.
	Seed uint64 `json:"seed,omitempty"`
	// Elapsed is the machine's time the hunt took, shrinking and reduction
	// included — inside a testing/synctest bubble too, whose clock the
	// scenarios move by hours.
	Elapsed time.Duration `json:"elapsedNs"`
	// FoundAfter is the machine's time to the first failing check — the
	// time to kill — before any shrinking; zero when nothing failed.
	FoundAfter time.Duration `json:"foundAfterNs,omitempty"`
	// Law is the law broken, "property/law".
	Law string `json:"law,omitempty"`
	// Verdict, Scenario and Outcome describe the shrunk and reduced
	// counterexample.
	Verdict  Verdict            `json:"verdict"`
	Scenario *scenario.Scenario `json:"scenario,omitempty"`
	Outcome  *runner.Outcome    `json:"-"`
	// ShrunkSize is the size rapid's shrink ended at, before the reduction
	// pass (Scenario.Size is after it). A failure drawn with a burst of
	// 1,024 ticks or more is not shrunk by rapid (each of its tries would
	// play the burst): its ShrunkSize is the size drawn.
	ShrunkSize int `json:"shrunkSize,omitempty"`
	// Message is rapid's own report.
	Message string `json:"message,omitempty"`
}

// Hunt searches for a scenario in which target breaks one of the hunted
// laws, shrinks it with rapid and then reduces it (Reduce). It drives rapid
// with its own recorder instead of a *testing.T, so a failure is a result,
// not a failed test: this is how the mutant table is measured and how
// campaigns run.
func Hunt(target system.Target, opts HuntOptions) HuntResult {
	start := machineclock.Now()
	res := rapidHunt(target, opts)
	if res.Failed && res.Scenario != nil && !opts.NoReduce {
		reduced := Reduce(res.Scenario, stillFails(target, HuntOptions{Properties: opts.Properties, T: opts.T}, res.Law))
		if reduced != res.Scenario {
			if out, v, ok := judgeLaw(reduced, target, opts, res.Law); ok {
				res.Scenario, res.Outcome, res.Verdict = reduced, out, v
			}
		}
		res.Elapsed = machineclock.Since(start)
	}
	return res
}

func rapidHunt(target system.Target, opts HuntOptions) HuntResult {
	seed := opts.Seed
	for seed == 0 {
		seed = rand.Uint64() // known, so that a failure not shrunk by rapid has its seed too
	}
	g := opts.Generator
	if g == nil {
		g = gen.ForKind(opts.Kind)
	}
	cov := opts.Coverage
	found := hunt.Run(hunt.Config{Name: "hunt/" + target.Name, Checks: max(opts.Checks, 1), Seed: seed},
		func(t *rapid.T) *scenario.Scenario { return g.Draw(t, "scenario") },
		func(_ *rapid.T, s *scenario.Scenario, shrinking bool) hunt.Verdict[failure] {
			o := opts
			if shrinking {
				o.Coverage = nil // what rapid plays while shrinking was not drawn
			} else {
				o.Coverage = cov
			}
			f := judgeScenario(s, target, o)
			if f == nil {
				return hunt.Verdict[failure]{}
			}
			// A failure with a big burst is not handed to rapid's shrink,
			// which would play the burst's 65,536+ ticks at each of its
			// thousands of tries: the reduction pass bisects the burst and
			// removes what plays no role in a few dozen.
			return hunt.Verdict[failure]{Failure: f, Summary: f.law + ": " + f.verdict.Summary, Stop: bigBurst(f.scenario)}
		})
	if found.Stopped {
		return burstFailure(target, found.Failure, found.Checks, seed, found.FoundAfter, found.Elapsed)
	}
	// rapid stops drawing early when its deadline (a day away, by the
	// clock of the goroutine: a synctest bubble's fake clock, which a run
	// may move by years) nears, so a passed hunt counts what it played.
	res := HuntResult{Target: target.Name, Failed: found.Failed, Elapsed: found.Elapsed, Checks: found.Checks, Message: found.Message,
		FoundAfter: found.FoundAfter, Seed: found.Seed}
	if last := found.Failure; last != nil && found.Failed {
		res.Law, res.Verdict, res.Scenario, res.Outcome = last.law, last.verdict, last.scenario, last.outcome
		if last.scenario != nil {
			res.ShrunkSize = last.scenario.Size()
		}
	}
	return res
}

// bigBurstTicks is the size from which a burst makes a failing scenario
// too dear for rapid's shrink.
const bigBurstTicks = 1 << 10

// bigBurst reports whether s has a burst of bigBurstTicks or more.
func bigBurst(s *scenario.Scenario) bool {
	if s == nil || s.Projection == nil {
		return false
	}
	for _, st := range s.Projection.Steps {
		if st.Op == scenario.OpBurst && st.Count >= bigBurstTicks {
			return true
		}
	}
	return false
}

// burstFailure is the result of a hunt whose failing scenario, drawn as the
// checks-th with a big burst, rapid did not shrink. Its seed is rapid's for
// that check (rapid moves the seed on by the check's index before each
// check), so -rapid.seed reproduces it as a hunt's first check.
func burstFailure(target system.Target, f *failure, checks int, base uint64, foundAfter, elapsed time.Duration) HuntResult {
	n := uint64(checks - 1)
	seed := base + n*(n+1)/2
	return HuntResult{Target: target.Name, Failed: true, Checks: checks, Seed: seed, Elapsed: elapsed, FoundAfter: foundAfter,
		Law: f.law, Verdict: f.verdict, Scenario: f.scenario, Outcome: f.outcome, ShrunkSize: f.scenario.Size(),
		Message: fmt.Sprintf("[rapid] failed after %d tests: %s: %s (a scenario with a burst of %d+ ticks: not shrunk by rapid, reduced by bisection)\nTo reproduce, specify -rapid.seed=%d",
			checks-1, f.law, f.verdict.Summary, bigBurstTicks, seed)}
}

type failure struct {
	law      string // "property/law"
	verdict  Verdict
	scenario *scenario.Scenario
	outcome  *runner.Outcome
}

// RunnerLaw is the law a failure names when the runner could not play a
// scenario at all.
const RunnerLaw = "runner/plays"

// judgeDrawn draws a scenario, runs it and judges it; nil means no hunted
// law was broken.
func judgeDrawn(t *rapid.T, target system.Target, opts HuntOptions) *failure {
	g := opts.Generator
	if g == nil {
		g = gen.ForKind(opts.Kind)
	}
	s := g.Draw(t, "scenario")
	return judgeScenario(s, target, opts)
}

// judgeScenario plays s and returns its first hunted breach, if any.
func judgeScenario(s *scenario.Scenario, target system.Target, opts HuntOptions) *failure {
	out, verdicts, err := Judge(s, target, opts.Properties, JudgeOptions{Off: opts.Off, Coverage: opts.Coverage, T: opts.T, breachesOnly: true})
	if f := runnerFailure(s, out, err); f != nil {
		return f
	}
	for _, v := range verdicts {
		for _, b := range v.Breaches {
			if opts.hunted(v.Property, b.Law) {
				return &failure{law: ID(v.Property, b.Law), verdict: lawVerdict(v, b), scenario: s, outcome: out}
			}
		}
	}
	out.Release() // a check that passed: nobody reads its outcome
	return nil
}

// runnerFailure is the failure of a scenario the runner could not play, or
// whose store left goroutines running; nil when err is.
func runnerFailure(s *scenario.Scenario, out *runner.Outcome, err error) *failure {
	var leak *LeakError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &leak):
		v := Verdict{Property: "runner", Law: "goroutines-left", Summary: "the store left goroutines running after the scenario ended",
			Details: []string{leak.Leak.Error()}}
		return &failure{law: LeakLaw, verdict: v, scenario: s, outcome: out}
	}
	v := Verdict{Property: "runner", Law: "plays", Summary: "the runner could not play the scenario", Details: []string{err.Error()}}
	return &failure{law: RunnerLaw, verdict: v, scenario: s}
}

// lawVerdict is v narrowed to breach b, so that a report shows the law the
// hunt was about first.
func lawVerdict(v Verdict, b Breach) Verdict {
	out := v
	out.Law, out.Summary, out.Diff = b.Law, b.Summary, b.Diff
	var rest []Breach
	for _, o := range v.Breaches {
		if o.Law != b.Law {
			rest = append(rest, o)
		}
	}
	out.Breaches = append([]Breach{b}, rest...)
	out.Details = nil
	for _, o := range out.Breaches {
		for _, d := range o.Details {
			out.Details = append(out.Details, o.Law+": "+d)
		}
	}
	return out
}

// StillFails is the predicate a reduction keeps: the scenario still breaks
// law ("property/law") against target, judged by props (nil: every
// property of its kind), and — when target is a mutant — the reference
// still passes it, so the counterexample keeps blaming the mutant.
func StillFails(target system.Target, props []Property, law string) func(*scenario.Scenario) bool {
	return stillFails(target, HuntOptions{Properties: props}, law)
}

// stillFails is StillFails judged under opts (its properties and its T).
func stillFails(target system.Target, opts HuntOptions, law string) func(*scenario.Scenario) bool {
	return func(s *scenario.Scenario) bool {
		return failsLaw(s, target, opts, law) && (!target.Mutant || referencePasses(s))
	}
}

// failsLaw reports whether s still breaks law ("property/law") against target.
func failsLaw(s *scenario.Scenario, target system.Target, opts HuntOptions, law string) bool {
	_, _, ok := judgeLaw(s, target, opts, law)
	return ok
}

// judgeLaw plays s and returns the outcome and the verdict narrowed to law
// when s breaks it.
func judgeLaw(s *scenario.Scenario, target system.Target, opts HuntOptions, law string) (*runner.Outcome, Verdict, bool) {
	if s.Validate() != nil {
		return nil, Verdict{}, false
	}
	out, verdicts, err := Judge(s, target, opts.Properties, JudgeOptions{Off: opts.Off, T: opts.T})
	if err != nil {
		if f := runnerFailure(s, out, err); f != nil && f.law == law && f.outcome != nil {
			return f.outcome, f.verdict, true
		}
		return nil, Verdict{}, false
	}
	for _, v := range verdicts {
		for _, b := range v.Breaches {
			if ID(v.Property, b.Law) == law {
				return out, lawVerdict(v, b), true
			}
		}
	}
	out.Release()
	return nil, Verdict{}, false
}

// referencePasses reports whether the reference passes every property of
// s's kind on s: a reduction of a mutant's counterexample must keep
// blaming the mutant, not the scenario.
func referencePasses(s *scenario.Scenario) bool {
	_, verdicts, err := Judge(s, system.Reference(), nil)
	return err == nil && len(Failed(verdicts)) == 0
}

// HuntEach hunts the laws of opts.Properties one after another, the way a
// campaign does: each time a law breaks, its counterexample is kept and the
// hunt goes on without that law, until no hunted law breaks within
// opts.Checks scenarios. It returns one result per broken law, so that a
// target breaking two laws is shown breaking both, each with its own
// shrunk and reduced counterexample.
func HuntEach(target system.Target, opts HuntOptions) []HuntResult {
	hunted := opts.Laws
	if len(hunted) == 0 {
		hunted = LawIDs(opts.Properties)
	}
	var out []HuntResult
	for round := uint64(0); len(hunted) > 0; round++ {
		o := opts
		o.Laws = hunted
		if o.Seed != 0 {
			o.Seed += round
		}
		res := Hunt(target, o)
		if !res.Failed {
			return out
		}
		out = append(out, res)
		i := slices.Index(hunted, res.Law)
		if i < 0 {
			return out // the runner could not play a scenario: nothing more to learn
		}
		hunted = slices.Delete(slices.Clone(hunted), i, i+1)
	}
	return out
}
