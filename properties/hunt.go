package properties

import (
	"flag"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"pgregory.net/rapid"

	"github.com/idemcheck/idemcheck/faults/gen"
	"github.com/idemcheck/idemcheck/faults/runner"
	"github.com/idemcheck/idemcheck/faults/scenario"
	"github.com/idemcheck/idemcheck/impl/system"
)

// HuntOptions configure a Hunt.
type HuntOptions struct {
	// Kind of scenarios to draw.
	Kind scenario.Kind
	// Properties to judge every run by; a run fails on the first that fails.
	Properties []Property
	// Checks is the number of scenarios rapid draws before giving up.
	Checks int
	// Seed is rapid's starting seed; 0 draws a random one (rapid reports it).
	Seed uint64
}

// HuntResult is what a Hunt found.
type HuntResult struct {
	Target string `json:"target"`
	// Failed is true when a scenario violated a property.
	Failed bool `json:"failed"`
	// Checks is the number of scenarios drawn until the first failure (or all
	// of them when none failed).
	Checks int `json:"checks"`
	// Seed reproduces the failure with -rapid.seed.
	Seed uint64 `json:"seed,omitempty"`
	// Elapsed is the wall time of the hunt, shrinking included.
	Elapsed time.Duration `json:"elapsedNs"`
	// FoundAfter is the wall time to the first failing check — the time to
	// kill — before any shrinking; zero when nothing failed.
	FoundAfter time.Duration `json:"foundAfterNs,omitempty"`
	// Verdict, Scenario and Outcome describe the shrunk counterexample.
	Verdict  Verdict            `json:"verdict"`
	Scenario *scenario.Scenario `json:"scenario,omitempty"`
	Outcome  *runner.Outcome    `json:"-"`
	// Message is rapid's own report.
	Message string `json:"message,omitempty"`
}

// rapidMu serialises hunts: rapid reads its seed and check count from
// process-wide flags.
var rapidMu sync.Mutex

// Hunt searches for a scenario in which target violates one of the
// properties, and shrinks it. It drives rapid with its own recorder instead of
// a *testing.T, so a failure is a result, not a failed test: this is how the
// mutant table is measured and how campaigns run.
func Hunt(target system.Target, opts HuntOptions) HuntResult {
	rapidMu.Lock()
	defer rapidMu.Unlock()
	restore := setFlags(map[string]string{
		"rapid.checks":     strconv.Itoa(max(opts.Checks, 1)),
		"rapid.seed":       strconv.FormatUint(opts.Seed, 10),
		"rapid.nofailfile": "true",
	})
	defer restore()

	rec := &recorder{name: "hunt/" + target.Name}
	var last *failure
	var foundAfter time.Duration
	start := time.Now()
	rapid.Check(rec, func(t *rapid.T) {
		if f := judgeDrawn(t, target, opts); f != nil {
			if foundAfter == 0 {
				foundAfter = time.Since(start)
			}
			last = f
			t.Fatalf("%s: %s", f.verdict.Property, f.verdict.Summary)
		}
	})
	res := HuntResult{Target: target.Name, Failed: rec.failed, Elapsed: time.Since(start), Checks: max(opts.Checks, 1), Message: rec.message()}
	if rec.failed {
		res.FoundAfter = foundAfter
	}
	if m := failedAfter.FindStringSubmatch(res.Message); m != nil {
		n, _ := strconv.Atoi(m[1])
		res.Checks = n + 1
	}
	if m := seedRe.FindStringSubmatch(res.Message); m != nil {
		res.Seed, _ = strconv.ParseUint(m[1], 10, 64)
	}
	if last != nil && rec.failed {
		res.Verdict, res.Scenario, res.Outcome = last.verdict, last.scenario, last.outcome
	}
	return res
}

var (
	failedAfter = regexp.MustCompile(`failed after (\d+) tests`)
	seedRe      = regexp.MustCompile(`-rapid\.seed=(\d+)`)
)

type failure struct {
	verdict  Verdict
	scenario *scenario.Scenario
	outcome  *runner.Outcome
}

// judgeDrawn draws a scenario, runs it and judges it; nil means it passed.
func judgeDrawn(t *rapid.T, target system.Target, opts HuntOptions) *failure {
	s := gen.ForKind(opts.Kind).Draw(t, "scenario")
	out, err := runner.Run(s, target)
	if err != nil {
		return &failure{verdict: fail("runner", "the runner could not play the scenario", err.Error()), scenario: s}
	}
	for _, p := range opts.Properties {
		if v := p.Check(out); !v.Pass {
			return &failure{verdict: v, scenario: s, outcome: out}
		}
	}
	return nil
}

func setFlags(values map[string]string) (restore func()) {
	old := map[string]string{}
	for name, v := range values {
		f := flag.Lookup(name)
		if f == nil {
			continue
		}
		old[name] = f.Value.String()
		_ = f.Value.Set(v)
	}
	return func() {
		for name, v := range old {
			_ = flag.Lookup(name).Value.Set(v)
		}
	}
}

// recorder is a rapid.TB that records a failure instead of failing a test.
type recorder struct {
	name    string
	failed  bool
	skipped bool
	msgs    []string
}

func (r *recorder) Helper()                           {}
func (r *recorder) Name() string                      { return r.name }
func (r *recorder) Logf(string, ...any)               {}
func (r *recorder) Log(...any)                        {}
func (r *recorder) Skipf(format string, args ...any)  { r.skipped = true }
func (r *recorder) Skip(...any)                       { r.skipped = true }
func (r *recorder) SkipNow()                          { r.skipped = true }
func (r *recorder) Errorf(format string, args ...any) { r.fail(fmt.Sprintf(format, args...)) }
func (r *recorder) Error(args ...any)                 { r.fail(fmt.Sprint(args...)) }
func (r *recorder) Fatalf(format string, args ...any) { r.fail(fmt.Sprintf(format, args...)) }
func (r *recorder) Fatal(args ...any)                 { r.fail(fmt.Sprint(args...)) }
func (r *recorder) FailNow()                          { r.failed = true }
func (r *recorder) Fail()                             { r.failed = true }
func (r *recorder) Failed() bool                      { return r.failed }

func (r *recorder) fail(msg string) {
	r.failed = true
	r.msgs = append(r.msgs, msg)
}

func (r *recorder) message() string { return strings.Join(r.msgs, "\n") }
