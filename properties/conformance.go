package properties

import (
	"flag"
	"os"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/idemcheck/idemcheck/faults/scenario"
	"github.com/idemcheck/idemcheck/impl/contract/store"
	"github.com/idemcheck/idemcheck/impl/system"
	"github.com/idemcheck/idemcheck/internal/hunt"
	"github.com/idemcheck/idemcheck/internal/machineclock"
	"github.com/idemcheck/idemcheck/properties/coverage"
)

// DefaultBudget is how long Conformance and CheckProperty check each
// property when neither Options nor rapid's flags say otherwise, split
// evenly among its laws. rapid's own default, 100 scenarios, is far too few:
// a store whose stale release frees another worker's claim needs a takeover
// whose slow worker then fails, and a budget of seconds draws thousands of
// scenarios.
const DefaultBudget = 3 * time.Second

// Options tune Conformance and CheckProperty.
type Options struct {
	// Off switches laws off: "property/law" → the reason, which every
	// verdict records. A law switched off is not judged at all.
	Off map[string]string
	// Conventions, when set, declare the store's conventions
	// (store.Conventions) for the target's consumption parts, as
	// system.WithStoreConventions does. An unknown convention fails the
	// test at once.
	Conventions *store.Conventions
	// Checks, when positive, checks each law on exactly this many drawn
	// scenarios instead of for a time: what a test suite of its own wants,
	// for a fixed cost.
	Checks int
	// Budget is how long each property is checked, split among its laws;
	// zero means DefaultBudget. Checks overrides it.
	Budget time.Duration
}

// budget is how many scenarios one law is checked on.
type budget struct {
	// single: one rapid.Check at rapid's own count (-rapid.checks,
	// -rapid.seed, RAPID_CHECKS or -short given: rapid's flags rule).
	single bool
	checks int           // a fixed count, when positive
	until  time.Duration // otherwise, a time per law
}

// lawBudget is the budget of one of a property's laws under o.
func lawBudget(o Options, laws int) budget {
	if o.Checks > 0 {
		return budget{checks: o.Checks}
	}
	if rapidFlagsGiven() || testing.Short() {
		return budget{single: true}
	}
	total := o.Budget
	if total <= 0 {
		total = DefaultBudget
	}
	return budget{until: total / time.Duration(max(laws, 1))}
}

// rapidFlagsGiven reports whether the command line or the environment set
// rapid's check count or seed: the user asked for rapid's behaviour.
func rapidFlagsGiven() bool {
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "rapid.checks" || f.Name == "rapid.seed" })
	_, env := os.LookupEnv("RAPID_CHECKS")
	_, seed := os.LookupEnv("RAPID_SEED")
	return given || env || seed
}

// spent reports whether n checks started at start have used the budget up.
func (b budget) spent(n int, start time.Time) bool {
	switch {
	case b.single:
		return false
	case b.checks > 0:
		return n >= b.checks
	}
	return machineclock.Since(start) >= b.until
}

// applyOptions returns target as o declares it, or fails t on a bad option.
func applyOptions(t *testing.T, target system.Target, o Options) system.Target {
	t.Helper()
	if o.Conventions == nil {
		return target
	}
	if err := o.Conventions.Validate(); err != nil {
		t.Fatalf("properties: Options.Conventions: %v", err)
	}
	if target.Consumption != nil {
		c := *target.Consumption
		c.Conventions = *o.Conventions
		target.Consumption = &c
	}
	return target
}

func optionsOf(opts []Options) Options {
	if len(opts) > 0 {
		return opts[0]
	}
	return Options{}
}

// Conformance checks target against every law of every property that
// applies to it, with rapid drawing and shrinking scenarios. It is the one
// call another Go implementation makes from its own test:
//
//	func TestMyStore(t *testing.T) {
//		properties.Conformance(t, system.WithStore("mystore", openMyStore))
//	}
//
// Each law is its own subtest (TestMyStore/consumption/fencing/
// stale-token-changes-nothing), so every broken law is reported with its
// own shrunk and reduced counterexample: the numbered trace, the diff of the
// model against the implementation, and rapid's seed to replay it.
//
// Each property is checked for DefaultBudget (3 s), split among its laws;
// Options.Budget changes the time and Options.Checks sets a fixed number of
// scenarios per law instead. -rapid.checks N (or -rapid.seed, or -short)
// hands the count back to rapid: N scenarios per law. A law checked on a
// number of scenarios fixed in advance (Options.Checks, -rapid.checks) of
// coverage.MinChecks or more also fails if its scenarios never reached one
// of the named situations (package coverage) that the target can reach; a
// time budget never does, however many scenarios it fits, so that no
// verdict depends on the machine's speed. Use -run to pick laws.
func Conformance(t *testing.T, target system.Target, opts ...Options) {
	t.Helper()
	target = applyOptions(t, target, optionsOf(opts))
	for _, k := range []scenario.Kind{scenario.KindConsumption, scenario.KindProjection} {
		if !Plays(target, k) {
			continue
		}
		t.Run(string(k), func(t *testing.T) {
			for _, p := range ForKind(k) {
				t.Run(p.Name, func(t *testing.T) { checkProperty(t, target, p, optionsOf(opts)) })
			}
		})
	}
}

// CheckProperty checks target against one property's laws, a subtest per
// law: the per-property entry point.
//
//	func TestMyHLC(t *testing.T) {
//		properties.CheckProperty(t, myTarget, "hlc-laws")
//	}
func CheckProperty(t *testing.T, target system.Target, property string, opts ...Options) {
	t.Helper()
	p, ok := ByName(property)
	if !ok {
		t.Fatalf("properties: no property %q; the properties are %v", property, names(All()))
	}
	if !Plays(target, p.Kind) {
		t.Fatalf("properties: target %q plays no %s scenario, which %s judges", target.Name, p.Kind, p.Name)
	}
	target = applyOptions(t, target, optionsOf(opts))
	checkProperty(t, target, p, optionsOf(opts))
}

func names(ps []Property) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.Name
	}
	return out
}

// Plays reports whether target can play scenarios of kind k: a mutant of
// the consumption pipeline has no projection parts, and a store under test
// (system.WithStore) has only consumption parts.
func Plays(t system.Target, k scenario.Kind) bool {
	switch k {
	case scenario.KindConsumption:
		return t.Consumption != nil
	case scenario.KindProjection:
		return t.Projection != nil
	}
	return false
}

func checkProperty(t *testing.T, target system.Target, p Property, o Options) {
	for _, law := range p.Laws {
		id := ID(p.Name, law.Name)
		t.Run(law.Name, func(t *testing.T) {
			if reason, off := o.Off[id]; off {
				t.Skipf("law %s switched off: %s", id, reason)
			}
			checkLaw(t, target, HuntOptions{Kind: p.Kind, Properties: []Property{p}, Laws: []string{id}, Off: o.Off}, lawBudget(o, len(p.Laws)))
		})
	}
}

// lawT is what checkLaw needs of a *testing.T.
type lawT interface {
	rapid.TB
	Cleanup(func())
}

// goOn is a test for rapid whose FailNow and Fatal mark the failure and
// return: rapid.Check then returns after a failure instead of ending the
// test, so that the counterexample is reduced before the test ends — not in
// a cleanup, where a store that reads time.Now could not be given the
// bubbles it plays in.
type goOn struct{ lawT }

func (g goOn) FailNow()                          { g.Fail() }
func (g goOn) Fatalf(format string, args ...any) { g.Errorf(format, args...) }
func (g goOn) Fatal(args ...any)                 { g.Error(args...) }

// checkLaw runs rapid over scenarios of opts.Kind, failing on the hunted
// law, until b is spent: rapid.Check is called round after round (each
// round draws from a fresh seed), and once the budget is spent the rest of a
// round passes at once. rapid shrinks a failure; checkLaw then reduces the
// smallest one further and logs its report. A law checked on a fixed
// count of coverage.MinChecks scenarios or more must have reached every
// situation its target can reach (judgeCoverage).
// A target whose store reads time.Now plays each scenario in a bubble of
// t's own (JudgeOptions.T).
func checkLaw(t lawT, target system.Target, opts HuntOptions, b budget) {
	t.Helper()
	if tt, ok := t.(*testing.T); ok {
		opts.T = tt
	}
	if c := target.Consumption; c != nil && c.TimeNow != nil && c.TimeNow.Lingering != "" {
		t.Logf("goroutines the library leaves running after a scenario are tolerated: %s", c.TimeNow.Lingering)
	}
	var last *failure
	cov := coverage.NewObserver()
	opts.Coverage = cov
	start, n := machineclock.Now(), 0
	prop := func(rt *rapid.T) {
		if last == nil && b.spent(n, start) {
			return // the budget is spent: the rest of rapid's round passes
		}
		n++
		f := judgeDrawn(rt, target, opts)
		if f == nil {
			return
		}
		last = f
		opts.Coverage = nil // what rapid plays while shrinking was not drawn
		// The message stays free of times and pointers so rapid can tell
		// the shrunk failure is the one it started from; the report is
		// logged once the shrinking is over.
		rt.Fatalf("%s: %s", f.law, f.verdict.Summary)
	}
	for {
		hunt.Check(goOn{t}, prop)
		if t.Failed() || b.single || b.spent(n, start) {
			break
		}
	}
	if t.Failed() {
		if last != nil && last.outcome != nil {
			reduced := Reduce(last.scenario, stillFails(target, HuntOptions{Properties: opts.Properties, T: opts.T}, last.law))
			out, v, ok := judgeLaw(reduced, target, opts, last.law)
			if !ok {
				out, v = last.outcome, last.verdict
			}
			t.Logf("the counterexample, shrunk by rapid to size %d and reduced to size %d:\n%s", last.scenario.Size(), out.Scenario.Size(),
				Report(v, out, ReportOptions{Scenario: testing.Verbose(), Replay: "rerun this test with the -rapid.seed printed above"}))
		}
		t.FailNow()
		return
	}
	t.Logf("%d scenarios checked in %s", n, machineclock.Since(start).Round(time.Millisecond))
	judgeCoverage(t, target, opts.T, b, cov.Counts())
}

// CheckKind runs rapid over scenarios of kind k against target, failing on
// the first law of any property of that kind that breaks.
func CheckKind(t *testing.T, target system.Target, k scenario.Kind) {
	t.Helper()
	checkLaw(t, target, HuntOptions{Kind: k, Properties: ForKind(k)}, lawBudget(Options{}, 1))
}
