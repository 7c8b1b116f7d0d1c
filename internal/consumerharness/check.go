package consumerharness

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/idemcheck/idemcheck/faults/gen"
	"github.com/idemcheck/idemcheck/internal/consumerharness/backend"
	"github.com/idemcheck/idemcheck/internal/hunt"
)

// Option tunes a Check, Hunt, Replay or Fuzz.
type Option func(*config)

type config struct {
	checks   int
	seed     uint64
	maxSteps int
	// weights weigh the kinds of step drawn scenarios are made of (nil:
	// the defaults; see GeneratorWith).
	weights    gen.Weights
	corpusDir  string
	noReduce   bool
	shrinkTime time.Duration
	backend    backend.Backend
	// t, set by Check, makes the scenarios' bubbles when package bubble
	// cannot (see runInBubble).
	t *testing.T
	// noBubble plays on the machine's clock, as when no bubble can be
	// had (for the tests of that path).
	noBubble bool
	// verify holds the options of Verify and Explore (verify.go).
	verify verifyConfig
	// schemaPrint is the fingerprint of the consumer's database schema
	// (see schemaPrint), read by preflight; saved cases carry it.
	schemaPrint string
}

func newConfig(opts []Option) config {
	c := config{maxSteps: 16, shrinkTime: 2 * time.Second, backend: backend.SQLite{}}
	for _, o := range opts {
		o(&c)
	}
	return c
}

// Checks sets how many scenarios are drawn (default: rapid's -rapid.checks,
// 100).
func Checks(n int) Option { return func(c *config) { c.checks = n } }

// Seed sets rapid's seed (default: -rapid.seed, or a random one that the
// failure report prints).
func Seed(seed uint64) Option { return func(c *config) { c.seed = seed } }

// MaxSteps bounds the explicit schedule of a drawn scenario (default 16).
func MaxSteps(n int) Option { return func(c *config) { c.maxSteps = max(n, 0) } }

// Faults weighs the kinds of step Check and Hunt draw a scenario's
// schedule from (run, fail, crash, advance, duplicate, replay; see
// Kinds): a kind of weight 6 is drawn twice as often as one of weight 3,
// one of weight 0 never; a kind left out keeps its default
// (DefaultWeight). Without it, a seed draws the scenario it always drew.
// A kind the consumer's world does not play is an error of Check and
// Hunt. Fuzz decodes its inputs as it always did: the fuzzing engine, not
// weights, chooses the bytes a schedule is read from.
func Faults(w gen.Weights) Option { return func(c *config) { c.weights = w } }

// CorpusDir is where a counterexample is saved. Check saves into
// testdata/consumertest by default; Hunt saves only when this is given.
func CorpusDir(dir string) Option { return func(c *config) { c.corpusDir = dir } }

// ShrinkTime bounds rapid's shrinking of a counterexample (default 2s);
// the reduction pass that follows takes over from where it stopped.
func ShrinkTime(d time.Duration) Option { return func(c *config) { c.shrinkTime = d } }

// NoReduce skips the reduction pass that follows rapid's shrinking.
func NoReduce() Option { return func(c *config) { c.noReduce = true } }

// ReplayEnv names the environment variable that makes Check replay one
// saved scenario instead of drawing new ones, as a failure's report prints
// it: IDEMCHECK_REPLAY=FILE go test ./PKG -run '^TestX$', from the module's
// root, FILE relative to the package's directory. A Check whose consumer
// the file is not a case of (another consumer's, or no such file from its
// package) logs why and checks nothing: see replayenv.go.
const ReplayEnv = "IDEMCHECK_REPLAY"

// Check puts the consumer under the harness from a test: it draws
// scenarios (events, duplicates, several workers, crashes, injected
// failures, time, replays), plays each against c on a fresh database, and
// fails t with a report of the smallest counterexample it finds. A
// consumer that cannot be run at all (a schema or a query that fails) fails
// t at once with the error.
func Check(t *testing.T, c Consumer, opts ...Option) {
	t.Helper()
	cfg := newConfig(opts)
	cfg.t = t
	stop, err := cfg.start()
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	if cfg.corpusDir == "" {
		cfg.corpusDir = filepath.Join("testdata", "consumertest")
	}
	if file := os.Getenv(ReplayEnv); file != "" {
		path, s, other, err := replayCase(file, c)
		if err != nil {
			t.Fatalf("%s=%s: %v", ReplayEnv, file, err)
		}
		if other != "" {
			t.Logf("%s=%s is not a case of consumer %q (%s): not checked", ReplayEnv, file, c.displayName(), other)
			return
		}
		if path != file {
			file += " (" + path + ")"
		}
		t.Logf("%s=%s: replaying it against consumer %q", ReplayEnv, file, c.displayName())
		res, err := replay(c, s, cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Log(res.Report())
		if res.Failed {
			t.Fatalf("%s: %s", res.Law, res.Summary())
		}
		return
	}
	if err := preflight(c, &cfg); err != nil {
		t.Fatal(err)
	}
	replaySaved(t, c, cfg)
	if cfg.seed == 0 {
		// A seed of the harness's choosing, unless -rapid.seed gives one,
		// so that a passing run can say which scenarios it played.
		cfg.seed = rapidSeed()
	}
	res, err := huntConsumer(c, cfg, t.Name())
	if err != nil {
		t.Fatal(err)
	}
	if res.Failed {
		t.Fatalf("consumer %q breaks %s\n%s", c.displayName(), res.Law, res.Report())
	}
	res.Seed = cfg.seed
	t.Log(res.PassSummary())
}

// rapidSeed is -rapid.seed when given, else a random seed other than 0.
func rapidSeed() uint64 {
	if f := flag.Lookup("rapid.seed"); f != nil {
		if n, err := strconv.ParseUint(f.Value.String(), 10, 64); err == nil && n != 0 {
			return n
		}
	}
	for {
		if n := rand.Uint64(); n != 0 {
			return n
		}
	}
}

// PassSummary is the one line a passing Check logs: the scenarios played,
// the coverage situations they reached of all of SituationsFor (naming those
// never reached), and the seed that draws them again.
func (r Result) PassSummary() string {
	var never []string
	sits := SituationsFor(r.Log)
	for _, s := range sits {
		if r.Coverage[s] == 0 {
			never = append(never, s)
		}
	}
	line := fmt.Sprintf("consumer %q: no law broken in %d scenario(s); reached %d of %d coverage situations",
		r.Consumer, r.Checks, len(sits)-len(never), len(sits))
	if len(never) > 0 {
		line += " (never: " + strings.Join(never, ", ") + ")"
	}
	if r.Seed != 0 {
		line += fmt.Sprintf("; seed %d (-rapid.seed=%d draws them again)", r.Seed, r.Seed)
	}
	return line
}

// Result is what a Hunt or a Replay found.
type Result struct {
	Consumer string
	// Failed is true when a scenario broke a law.
	Failed bool
	// Law is the law broken (the first, in the order of Laws).
	Law      string
	Breaches []Breach
	// Scenario and Outcome are the shrunk and reduced counterexample.
	Scenario *Scenario
	Outcome  *Outcome
	// Checks is the number of scenarios played until the first failure
	// (or all of them): rapid's shrinking and the reduction pass are not
	// counted.
	Checks int
	// Seed reproduces the hunt with -rapid.seed.
	Seed uint64
	// SeedReplay, when not "", is the command Report gives to draw the
	// counterexample again from Seed (a tool's own, as fuzzrun's); by
	// default, go test's -rapid.seed.
	SeedReplay string
	// FoundAfter is the time to the first failing scenario, before
	// shrinking; Elapsed includes shrinking and reduction.
	FoundAfter time.Duration
	Elapsed    time.Duration
	// ShrunkSize is the counterexample's size after rapid's shrinking,
	// before the reduction pass.
	ShrunkSize int
	// CorpusFile is where the counterexample was saved.
	CorpusFile string
	// Replay is the command that replays it.
	Replay string
	// Coverage counts, for each of Situations, the drawn scenarios that
	// reached it (rapid's shrinking is not counted).
	Coverage map[string]int
	// Log is true for a consumer of a log broker: its coverage is of
	// LogSituations, not Situations.
	Log bool
	// MachineClock names what read the machine's clock instead of the
	// scenario's in any scenario played (see Outcome.MachineClock).
	MachineClock []string
}

// noteMachineClock adds what o's run read from the machine's clock.
func (r *Result) noteMachineClock(o *Outcome) {
	for _, m := range o.MachineClock {
		if !slices.Contains(r.MachineClock, m) {
			r.MachineClock = append(r.MachineClock, m)
		}
	}
}

// Summary is the one line of the breach of the result's law ("" when
// nothing failed).
func (r Result) Summary() string {
	for _, b := range r.Breaches {
		if b.Law == r.Law {
			return b.Summary
		}
	}
	return ""
}

// Hunt searches for a scenario in which c breaks a law, shrinks it with
// rapid and reduces it further, without failing any test: a failure is a
// result. An error means c could not be run at all.
func Hunt(c Consumer, opts ...Option) (Result, error) {
	return withStarted(opts, func(cfg config) (Result, error) { return huntConsumer(c, cfg, "hunt/"+c.displayName()) })
}

// Replay plays one scenario against c and judges it.
func Replay(c Consumer, s *Scenario, opts ...Option) (Result, error) {
	return withStarted(opts, func(cfg config) (Result, error) { return replay(c, s, cfg) })
}

// withStarted calls f with the configuration opts make, its database
// service started for the length of the call.
func withStarted(opts []Option, f func(cfg config) (Result, error)) (Result, error) {
	cfg := newConfig(opts)
	stop, err := cfg.start()
	if err != nil {
		return Result{}, err
	}
	defer stop()
	return f(cfg)
}

func replay(c Consumer, s *Scenario, cfg config) (Result, error) {
	if err := c.validate(); err != nil {
		return Result{}, err
	}
	// The run names the events as the consumer does (EventIDs), in place:
	// the caller's scenario stays as it was given.
	s = s.clone()
	start := time.Now()
	out, err := playScenario(context.Background(), c, s, cfg)
	if err != nil {
		return Result{}, err
	}
	out.schemaPrint = cfg.schemaPrint
	res := Result{Consumer: c.displayName(), Scenario: s, Outcome: out, Checks: 1, Elapsed: time.Since(start)}
	res.noteMachineClock(out)
	if bs := Judge(c, out); len(bs) > 0 {
		res.Failed, res.Law, res.Breaches = true, bs[0].Law, bs
	}
	return res, nil
}

// preflight runs the schema and the queries once, so that bad input is an
// error before any scenario.
func preflight(c Consumer, cfg *config) error {
	be := cfg.backend
	if err := c.validate(); err != nil {
		return err
	}
	if err := c.checkIDs(); err != nil {
		return err
	}
	ctx := context.Background()
	db, err := be.Fresh(ctx)
	if err != nil {
		return fmt.Errorf("%w: open a fresh %s database: %w", ErrBadInput, be.Name(), err)
	}
	defer db.Close()
	if c.PgxHandler != nil {
		if _, err := pgxDatabase(c, db, be.Name()); err != nil {
			return err
		}
	}
	if err := prepareSchema(ctx, db, c); err != nil {
		return err
	}
	if _, err = snapshot(ctx, db, c); err != nil {
		return err
	}
	cfg.schemaPrint, err = schemaPrint(ctx, db, be.Name(), c)
	if err != nil {
		return fmt.Errorf("consumertest: read the database's schema: %w", err)
	}
	return nil
}

func huntConsumer(c Consumer, cfg config, name string) (Result, error) {
	if err := preflight(c, &cfg); err != nil {
		return Result{}, err
	}
	start := time.Now()
	res := Result{Consumer: c.displayName(), Coverage: map[string]int{}, Log: c.Log != nil}
	var badInput error
	if err := ValidateWeights(cfg.weights); err != nil {
		return Result{}, fmt.Errorf("consumertest: Faults: %w", err)
	}
	scenarios := GeneratorWith(cfg.maxSteps, cfg.weights)
	if c.Log != nil {
		scenarios = LogGeneratorWith(cfg.maxSteps, cfg.weights)
	}
	h := hunt.Run(hunt.Config{Name: name, Checks: cfg.checks, Seed: cfg.seed, ShrinkTime: cfg.shrinkTime},
		func(t *rapid.T) *Scenario { return scenarios.Draw(t, "scenario") },
		func(t *rapid.T, s *Scenario, shrinking bool) hunt.Verdict[Result] {
			r, err := replay(c, s, cfg)
			if err != nil {
				badInput = err
				t.Fatalf("bad input: %v", err)
			}
			if !shrinking {
				for k := range r.Outcome.Situations {
					res.Coverage[k]++
				}
				res.noteMachineClock(r.Outcome)
			}
			if !r.Failed {
				return hunt.Verdict[Result]{}
			}
			return hunt.Verdict[Result]{Failure: &r, Summary: r.Law + ": " + r.Breaches[0].Summary}
		})
	res.Failed, res.Checks, res.Seed, res.FoundAfter = h.Failed, h.Checks, h.Seed, h.FoundAfter
	last, rapidMsg := h.Failure, h.Message
	if badInput != nil {
		return Result{}, badInput
	}
	if res.Failed && last == nil {
		return Result{}, fmt.Errorf("consumertest: the harness failed on consumer %q: %s", c.displayName(), rapidMsg)
	}
	if !res.Failed {
		res.Elapsed = time.Since(start)
		if len(res.MachineClock) > 0 && cfg.t != nil {
			cfg.t.Logf("consumer %q: read the machine's clock, not the scenario's:\n%s", c.displayName(), bullets(res.MachineClock))
		}
		return res, nil
	}
	found := *last
	res.Law, res.Breaches, res.Scenario, res.Outcome = found.Law, found.Breaches, found.Scenario, found.Outcome
	res.noteMachineClock(found.Outcome)
	res.ShrunkSize = found.Scenario.Size()
	if !cfg.noReduce {
		res.reduce(c, cfg, found.Scenario)
	}
	if err := confirmFresh(c, cfg, res); err != nil {
		return Result{}, err
	}
	res.Elapsed = time.Since(start)
	if cfg.corpusDir != "" {
		path, err := SaveScenario(cfg.corpusDir, c.displayName(), res.Law, res.Summary(), res.Scenario, res.Outcome, res.Seed)
		if err != nil {
			return res, fmt.Errorf("consumertest: save the counterexample: %w", err)
		}
		res.CorpusFile = path
		res.Replay = replayCommand(path, name)
	}
	return res, nil
}

// confirmFresh plays res's counterexample again on workers that reuse
// nothing, when its workers reused something across scenarios
// (handler.FreshWorkers: a process pool whose processes are reset between
// workers): a counterexample that breaks its law only on reused workers
// was made by what a reset kept, and is no verdict on the consumer.
func confirmFresh(c Consumer, cfg config, res Result) error {
	fw := res.Outcome.fresh
	if fw == nil {
		return nil
	}
	fc := c
	fc.Worker = fw
	again, err := replay(fc, res.Scenario, cfg)
	if err != nil {
		return err
	}
	for _, b := range again.Breaches {
		if b.Law == res.Law {
			return nil
		}
	}
	return fmt.Errorf("%w: consumer %q: the counterexample breaks %s on workers reused from earlier scenarios, and not on workers that served none: its Worker keeps state across scenarios (a process that declares reset must drop every piece of state on it, see the consumer protocol's reset), or it is not deterministic; first difference: %s",
		ErrBadInput, c.displayName(), res.Law, FirstDifference("reused", res.Outcome.Trace.Lines(), "fresh", again.Outcome.Trace.Lines()))
}

// FirstDifference renders the first line at which trace a (named aName)
// and trace b (named bName) differ.
func FirstDifference(aName string, a []string, bName string, b []string) string {
	for i := range max(len(a), len(b)) {
		var x, y string
		if i < len(a) {
			x = a[i]
		}
		if i < len(b) {
			y = b[i]
		}
		if x != y {
			return fmt.Sprintf("line %d, %s %q, %s %q", i+1, aName, x, bName, y)
		}
	}
	return "none"
}

// reduce replaces r's counterexample by the reduction of s (see Reduce),
// when the reduction removed anything.
func (r *Result) reduce(c Consumer, cfg config, s *Scenario) {
	if red, rr := Reduce(s, stillFails(c, cfg, r.Law)); red != s && rr != nil {
		r.Breaches, r.Scenario, r.Outcome = rr.Breaches, red, rr.Outcome
	}
}

// stillFails is the predicate of the reduction: s still breaks law.
func stillFails(c Consumer, cfg config, law string) func(*Scenario) *Result {
	return func(s *Scenario) *Result {
		r, err := replay(c, s, cfg)
		if err != nil || !r.Failed {
			return nil
		}
		for _, b := range r.Breaches {
			if b.Law == law {
				r.Law = law
				return &r
			}
		}
		return nil
	}
}

// Report renders the result for a person: the broken laws with their
// details and diff, the numbered trace, the seed, the corpus file and the
// replay command.
func (r Result) Report() string {
	var b strings.Builder
	if !r.Failed {
		fmt.Fprintf(&b, "PASS %s: no law broken in %d scenario(s)\n", r.Consumer, r.Checks)
		r.reportMachineClock(&b)
		if r.Outcome != nil {
			fmt.Fprintf(&b, "\ntrace:\n%s", r.Outcome.Trace)
		}
		return b.String()
	}
	for _, br := range r.Breaches {
		fmt.Fprintf(&b, "FAIL %s: %s\n", br.Law, br.Summary)
		for _, d := range br.Details {
			fmt.Fprintf(&b, "  - %s\n", d)
		}
		if br.Diff != "" {
			fmt.Fprintf(&b, "  expected (-want) vs consumer (+got):\n%s", indent(br.Diff, "    "))
		}
	}
	r.reportMachineClock(&b)
	if r.Scenario != nil && r.Outcome != nil {
		fmt.Fprintf(&b, "\ntrace of the scenario (%d step(s), %d worker(s), %d event(s)) on %s:\n%s",
			r.Scenario.Size(), r.Scenario.Workers, len(r.Scenario.Events), r.Outcome.Backend, r.Outcome.Trace)
	}
	if r.Seed != 0 {
		how := r.SeedReplay
		if how == "" {
			how = fmt.Sprintf("go test -run ... -rapid.seed=%d", r.Seed)
		}
		fmt.Fprintf(&b, "\nseed: %d (%s)\n", r.Seed, how)
	}
	if r.CorpusFile != "" {
		fmt.Fprintf(&b, "corpus file: %s\n", r.CorpusFile)
	}
	if r.Replay != "" {
		fmt.Fprintf(&b, "replay: %s\n", r.Replay)
	}
	return b.String()
}

// reportMachineClock says what read the machine's clock.
func (r Result) reportMachineClock(b *strings.Builder) {
	if len(r.MachineClock) > 0 {
		fmt.Fprintf(b, "NOTE: read the machine's clock, not the scenario's (times, and so the trace and the verdict, may differ from one play to the next):\n%s", bullets(r.MachineClock))
	}
}

func bullets(lines []string) string {
	var b strings.Builder
	for _, l := range lines {
		fmt.Fprintf(&b, "  - %s\n", l)
	}
	return b.String()
}

// indent is hunt.Indent.
func indent(s, prefix string) string { return hunt.Indent(s, prefix) }
