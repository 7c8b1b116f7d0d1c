package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/idemcheck/idemcheck/cmd/fuzzrun/internal/ext"
	"github.com/idemcheck/idemcheck/corpus"
	"github.com/idemcheck/idemcheck/examples/consumers/catalog"
	"github.com/idemcheck/idemcheck/internal/consumerharness"
	"github.com/idemcheck/idemcheck/report"
)

// A fuzzrun consumer campaign puts a team's consumer under the harness
// (package consumertest): an example consumer by name, or one a
// registered scheme resolves ("exec:COMMAND" once the process adapter
// registers "exec"). Violations are shrunk, reduced and saved as
// consumer-level corpus cases (corpus format version 3) under
// corpus/consumers.

// postgresConsumerBatch is the -batch of fuzzrun consumer -db postgres.
const postgresConsumerBatch = 1000

// ConsumerScheme resolves the part after "SCHEME:" of fuzzrun consumer SCHEME:ARG into a
// consumer; the io.Closer, if not nil, is closed when the run ends.
type ConsumerScheme func(arg string) (consumerharness.Consumer, io.Closer, error)

// consumerSchemes are the registered schemes, by name.
var consumerSchemes = map[string]ConsumerScheme{}

// consumerSchemeDocs describe each scheme for fuzzrun list.
var consumerSchemeDocs = map[string]string{}

// registerConsumerScheme adds a scheme; call it from an init function:
//
//	func init() { registerConsumerScheme("exec", "a process speaking the consumer protocol", resolveExec) }
func registerConsumerScheme(name, doc string, f ConsumerScheme) {
	if _, dup := consumerSchemes[name]; dup {
		panic("fuzzrun: consumer scheme " + name + " registered twice")
	}
	consumerSchemes[name], consumerSchemeDocs[name] = f, doc
}

// resolveConsumer opens the consumer fuzzrun consumer (or fuzzrun broker
// -consumer) names, as written for
// database db (-db).
func resolveConsumer(spec, db string) (consumerharness.Consumer, io.Closer, error) {
	if scheme, arg, ok := strings.Cut(spec, ":"); ok {
		f, known := consumerSchemes[scheme]
		if !known {
			return consumerharness.Consumer{}, nil, usagef("consumer: %q: no scheme %q (known: %s)", spec, scheme, schemeList())
		}
		if arg == "" {
			return consumerharness.Consumer{}, nil, usagef("consumer: %q names nothing after %q", spec, scheme+":")
		}
		c, closer, err := f(arg)
		if err != nil {
			return consumerharness.Consumer{}, nil, usagef("consumer %s: %v", spec, err)
		}
		if c.Name == "" {
			c.Name = safeConsumerName(spec)
		}
		return c, closer, nil
	}
	e, ok := catalog.Lookup(spec)
	if !ok {
		if slices.Contains(ext.ServerConsumers, spec) {
			return resolveServerConsumer(spec, db)
		}
		return consumerharness.Consumer{}, nil, usagef("consumer: %q is not an example consumer; they are %s (or SCHEME:ARG, schemes: %s)",
			spec, strings.Join(append(catalog.Names(), ext.ServerConsumers...), ", "), schemeList())
	}
	return e.On(db), nil, nil
}

// resolveServerConsumer opens an example consumer over a real server
// (ext.ServerConsumers): in a build with them (-tags servers), connected
// to its server; in another, a tagError that says how to build it.
func resolveServerConsumer(name, db string) (consumerharness.Consumer, io.Closer, error) {
	if ext.Registered == nil || ext.Registered.Consumer == nil {
		return consumerharness.Consumer{}, nil, &tagError{what: "the consumer " + name, tag: ext.Tag}
	}
	if db != "sqlite" {
		return consumerharness.Consumer{}, nil, usagef("consumer: %s runs on SQLite only; drop -db %s", name, db)
	}
	c, closer, err := ext.Registered.Consumer(name)
	if err != nil {
		return consumerharness.Consumer{}, nil, usagef("consumer: %s cannot be used: %v", name, err)
	}
	return c, closer, nil
}

// consumerTags is the -tags flag of go run that builds the consumer spec
// names ("" for all but those over real servers), for replay commands.
func consumerTags(spec string) string {
	if slices.Contains(ext.ServerConsumers, spec) {
		return "-tags " + ext.Tag + " "
	}
	return ""
}

// serialConsumer reports whether the scenarios of the consumer spec names
// must play one at a time (ext.Consumer.Serial).
func serialConsumer(spec string) bool {
	if ext.Registered == nil {
		return false
	}
	return slices.ContainsFunc(ext.Registered.Consumers, func(c ext.Consumer) bool { return c.Name == spec && c.Serial })
}

func schemeList() string {
	if len(consumerSchemes) == 0 {
		return "none registered"
	}
	return strings.Join(slices.Sorted(maps.Keys(consumerSchemes)), ", ")
}

// checkConsumer checks the flags of fuzzrun consumer together: a replay
// or a model check, and the database of the run.
func checkConsumer(o *options, r *rawFlags, given map[string]bool) error {
	if o.replay != "" && o.explore {
		return usagef("-replay and -explore are different modes (-replay FILE plays one saved case, -explore model-checks); give one of them")
	}
	if !o.explore && o.replay == "" {
		if err := o.checkBudget(); err != nil {
			return err
		}
	}
	if err := o.parseConsumerExplore(given, r.ef, r.cex); err != nil {
		return err
	}
	o.sqliteSet = given["sqlite"]
	if o.sqliteSet && o.db != "sqlite" {
		return usagef("-sqlite: declares SQLite's settings; drop it with -db %s", o.db)
	}
	switch o.db {
	case "sqlite":
	case "postgres":
		dsn := os.Getenv(consumerharness.PostgresEnv)
		if dsn == "" {
			return usagef("-db postgres: %s is not set (e.g. %s='postgres://postgres@127.0.0.1:5432/test?sslmode=disable')", consumerharness.PostgresEnv, consumerharness.PostgresEnv)
		}
		o.dbDSN = dsn
		if !given["batch"] {
			// Each hunt is a run of its own on PostgreSQL (a schema made,
			// the team's schema run, the schema dropped): fewer, longer.
			o.batch = postgresConsumerBatch
		}
	default:
		return usagef("-db: %q is not a database; give sqlite or postgres", o.db)
	}
	if given["weights"] && (o.explore || o.replay != "") {
		return usagef("-weights: weighs the steps a campaign draws; -explore tries every schedule and -replay plays a saved one")
	}
	if !o.explore {
		for _, f := range []string{"workers", "progress-every", "max-memory"} {
			if given[f] {
				return usagef("-%s: fuzzrun consumer runs one hunt at a time; -%s applies with -explore", f, f)
			}
		}
	}
	return nil
}

// consumerJSON is the fuzzrun consumer -json report.
type consumerJSON struct {
	Mode     string `json:"mode"`
	Consumer string `json:"consumer"`
	Seed     uint64 `json:"seed"`
	// Verdict is pass, violation, interrupted (by Ctrl-C or SIGTERM, no
	// law broken so far) or inconclusive (no scenario played).
	Verdict     string  `json:"verdict"`
	Interrupted bool    `json:"interrupted,omitempty"`
	Checks      int64   `json:"checks"`
	ElapsedMs   int64   `json:"elapsedMs"`
	PerSecond   float64 `json:"scenariosPerSec"`
	Failed      bool    `json:"failed"`
	Law         string  `json:"law,omitempty"`
	Summary     string  `json:"summary,omitempty"`
	Size        int     `json:"size,omitempty"`
	CorpusFile  string  `json:"corpusFile,omitempty"`
	Replay      string  `json:"replay,omitempty"`
	// RapidSeed draws the counterexample again as the first scenario of
	// a hunt, and ReplayBySeed is the command that does.
	RapidSeed    uint64   `json:"rapidSeed,omitempty"`
	ReplayBySeed string   `json:"replayBySeed,omitempty"`
	Trace        []string `json:"trace,omitempty"`
	// Coverage counts the drawn scenarios that reached each situation.
	Coverage map[string]int `json:"coverage,omitempty"`
	// Unreached lists the consumerharness.Situations no scenario reached.
	Unreached []string `json:"unreached,omitempty"`
	// HTML is the report written (-html), "" for none.
	HTML string `json:"html,omitempty"`
	// MachineClock names what read the machine's clock instead of the
	// scenario's (consumerharness.Result.MachineClock).
	MachineClock []string `json:"machineClock,omitempty"`
	// Error is what stopped the run short (the counterexample could not
	// be saved, say); "" when nothing did.
	Error string `json:"error,omitempty"`
	Exit  int    `json:"exit"`
}

// runConsumer runs a fuzzrun consumer campaign, or replays one file against it.
func runConsumer(ctx context.Context, o *options, stdout, stderr io.Writer) int {
	c, closer, err := resolveConsumer(o.consumer, o.db)
	if te := (*tagError)(nil); errors.As(err, &te) {
		return notBuilt(stderr, te.what, te.tag, o.args)
	}
	if err != nil {
		return say(stderr, exitUsage, "%v", err)
	}
	if closer != nil {
		defer closer.Close()
	}
	if o.replay != "" {
		return replayConsumer(o, c, stdout, stderr)
	}
	if rc, ok := closer.(resetChecker); ok {
		if err := rc.checkReset(c, o.dbOptions()); err != nil {
			return failed(stderr, "consumer "+o.consumer+": ", err, consumerharness.ErrBadInput, errKeepsState)
		}
	}
	if o.explore {
		return runConsumerExplore(ctx, o, c, stdout, stderr)
	}
	seed := o.seed
	if !o.seedGiven {
		seed = uint64(time.Now().UnixNano() % 1_000_000_000)
	}
	fmt.Fprintf(stderr, "fuzzrun: consumer %s on %s, seed %d, budget %s\n", c.Name, o.db, seed, consumerBudget(o))
	start := time.Now()
	var checks int64
	rep := consumerJSON{Mode: "consumer", Consumer: c.Name, Seed: seed}
	known := corpusFiles(o.corpusDir) // to tell a new counterexample in the report
	var found *consumerharness.Result
	var runErr error
	for round := uint64(0); ; round++ {
		if ctx.Err() != nil || (o.duration > 0 && time.Since(start) >= o.duration) || (o.checks > 0 && checks >= o.checks) {
			break
		}
		batch := int64(o.batch)
		if o.checks > 0 {
			batch = min(batch, o.checks-checks)
		}
		opts := []consumerharness.Option{consumerharness.Checks(int(batch)), consumerharness.Seed(seed + round), consumerharness.Faults(o.weights)}
		if o.corpusDir != "" {
			opts = append(opts, consumerharness.CorpusDir(o.corpusDir))
		}
		res, err := consumerharness.Hunt(c, append(opts, o.dbOptions()...)...)
		if err != nil && !res.Failed {
			return failed(stderr, "consumer "+c.Name+": ", err, consumerharness.ErrBadInput)
		}
		// A counterexample found but not saved (err: -corpus could not be
		// written) is still shown in full, then the error.
		runErr = err
		checks += int64(res.Checks)
		if rep.Coverage == nil {
			rep.Coverage = map[string]int{}
		}
		for k, n := range res.Coverage {
			rep.Coverage[k] += n
		}
		for _, m := range res.MachineClock {
			if !slices.Contains(rep.MachineClock, m) {
				rep.MachineClock = append(rep.MachineClock, m)
			}
		}
		if res.Failed {
			rep.Failed, rep.Law, rep.Summary = true, res.Law, res.Summary()
			if res.Scenario != nil {
				rep.Size = res.Scenario.Size()
			}
			rep.CorpusFile, rep.Replay = res.CorpusFile, consumerReplay(o, res.CorpusFile)
			if res.Seed != 0 {
				rep.RapidSeed = res.Seed
				rep.ReplayBySeed = fmt.Sprintf("go run ./cmd/fuzzrun consumer %s%s%s -seed %d -checks 1", shellQuote(o.consumer), o.dbFlag(), o.consumerWeightsFlag(), res.Seed)
			}
			if res.Outcome != nil {
				rep.Trace = res.Outcome.Trace.Lines()
			}
			res.Replay, res.SeedReplay = rep.Replay, rep.ReplayBySeed
			found = &res
			if !o.json {
				fmt.Fprint(stdout, res.Report())
			}
			break
		}
		fmt.Fprintf(stderr, "fuzzrun: %d scenarios, %s, no law broken\n", checks, time.Since(start).Round(time.Millisecond))
	}
	elapsed := time.Since(start)
	interrupted := ctx.Err() != nil && !rep.Failed
	rep.Checks, rep.ElapsedMs, rep.Interrupted = checks, elapsed.Milliseconds(), interrupted
	rep.PerSecond = perSecond(checks, elapsed)
	for _, sit := range consumerharness.SituationsFor(c.Log != nil) {
		if rep.Coverage[sit] == 0 {
			rep.Unreached = append(rep.Unreached, sit)
		}
	}
	rep.Verdict, rep.Exit = verdictOf(rep.Failed, interrupted, checks)
	if runErr != nil {
		rep.Error = runErr.Error()
		rep.Exit = max(rep.Exit, exitInternal)
	}
	rep.HTML = writeReport(o, stderr, &rep.Exit, func() *report.Run { return consumerHTML(o, c, rep, found, known, elapsed, interrupted) })
	if o.json {
		if err := writeJSON(stdout, rep); err != nil {
			return exitInternal
		}
	} else {
		if !rep.Failed {
			if line := shortRun(rep.Verdict, " "+c.Name, "scenarios", checks, elapsed, consumerBudget(o), "no law broken in those, "); line != "" {
				fmt.Fprintln(stdout, line)
			} else {
				fmt.Fprintf(stdout, "PASS %s: no law broken in %d scenarios (%s, %.0f scenarios/s)\n", c.Name, checks, elapsed.Round(time.Millisecond), rep.PerSecond)
			}
			if checks > 0 {
				printConsumerCoverage(stdout, rep.Coverage, rep.Unreached, consumerharness.SituationsFor(c.Log != nil))
			}
			if len(rep.MachineClock) > 0 {
				fmt.Fprintln(stdout, "NOTE: read the machine's clock, not the scenario's (times, and so traces and verdicts, may differ from one play to the next):")
				for _, m := range rep.MachineClock {
					fmt.Fprintf(stdout, "  - %s\n", m)
				}
			}
		}
		printReportFile(stdout, rep.HTML)
	}
	if runErr != nil {
		fmt.Fprintf(stderr, "fuzzrun: consumer %s: %v\n", c.Name, runErr)
	}
	return rep.Exit
}

// consumerWeightsFlag is the -weights flag that draws a consumer's
// scenarios again as this run drew them ("" for the defaults): every
// kind given, in name order, since a seed's scenario depends on them.
func (o *options) consumerWeightsFlag() string {
	if len(o.weights) == 0 {
		return ""
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(o.weights)) {
		parts = append(parts, fmt.Sprintf("%s=%d", k, o.weights[k]))
	}
	return " -weights " + strings.Join(parts, ",")
}

// consumerBudget describes the budget of a consumer campaign.
func consumerBudget(o *options) string {
	if o.checks > 0 {
		return fmt.Sprintf("%s or %d scenarios", o.duration, o.checks)
	}
	return o.duration.String()
}

// consumerReplay is the command that replays the consumer's corpus case
// file ("" for none).
func consumerReplay(o *options, file string) string {
	if file == "" {
		return ""
	}
	return fmt.Sprintf("go run %s./cmd/fuzzrun consumer %s%s -replay %s", consumerTags(o.consumer), shellQuote(o.consumer), o.dbFlag(), shellQuote(file))
}

// printConsumerCoverage is the coverage table of a consumer campaign: the
// situations every consumer should reach (consumerharness.Situations), then
// those a run also counts that a correct consumer may never meet.
func printConsumerCoverage(w io.Writer, reached map[string]int, unreached, sits []string) {
	n := len(sits)
	fmt.Fprintf(w, "coverage: %d of the %d situations every consumer should reach were reached", n-len(unreached), n)
	if len(unreached) > 0 {
		fmt.Fprintf(w, "; never: %s (a consumer that never reaches them is not tested there)", strings.Join(unreached, ", "))
	}
	fmt.Fprintln(w)
	for _, sit := range sits {
		fmt.Fprintf(w, "  %-34s %d\n", sit, reached[sit])
	}
	var more []string
	for _, sit := range slices.Sorted(maps.Keys(reached)) {
		if !slices.Contains(sits, sit) {
			more = append(more, sit)
		}
	}
	if len(more) > 0 {
		fmt.Fprintln(w, "also reached (not required of every consumer):")
		for _, sit := range more {
			fmt.Fprintf(w, "  %-34s %d\n", sit, reached[sit])
		}
	}
}

// replayConsumer plays one consumer-level case against the consumer.
func replayConsumer(o *options, c consumerharness.Consumer, stdout, stderr io.Writer) int {
	s, err := consumerharness.LoadScenario(o.replay)
	if err != nil {
		return say(stderr, exitUsage, "-replay: %v", err)
	}
	var recorded string
	if cs, err := corpus.Load(o.replay); err == nil && cs.IsConsumer() {
		recorded = fmt.Sprintf("recorded: %s broke %s (%s)\n", cs.Target, cs.Law, cs.Summary)
	}
	start := time.Now()
	res, err := consumerharness.Replay(c, s, o.dbOptions()...)
	if err != nil {
		return failed(stderr, "consumer "+c.Name+" -replay "+o.replay+": ", err, consumerharness.ErrBadInput)
	}
	exit := exitOK
	if res.Failed {
		exit = exitViolation
	}
	html := writeReport(o, stderr, &exit, func() *report.Run { return consumerReplayHTML(o, c, &res, time.Since(start)) })
	if o.json {
		rep := consumerJSON{Mode: "replay", Consumer: c.Name, Checks: 1, Failed: res.Failed, Law: res.Law, Summary: res.Summary(),
			Size: s.Size(), Trace: res.Outcome.Trace.Lines(), HTML: html, MachineClock: res.MachineClock, Exit: exit}
		return writeJSONOr(stdout, rep, exit)
	}
	fmt.Fprint(stdout, recorded)
	fmt.Fprint(stdout, res.Report())
	printReportFile(stdout, html)
	return exit
}

// listConsumers is the fuzzrun list section of the consumers.
func listConsumers(w io.Writer) {
	fmt.Fprintln(w, "\nconsumer laws (fuzzrun consumer NAME judges the consumer by each):")
	for _, law := range consumerharness.Laws {
		fmt.Fprintf(w, "  %-17s %s\n", law, consumerharness.LawDoc(law))
	}
	fmt.Fprintln(w, "\nconsumers (fuzzrun consumer NAME):")
	for _, e := range append(catalog.All(), catalog.Logs()...) {
		verdict := "correct"
		if !e.Correct() {
			verdict = "broken: " + e.Law
		}
		fmt.Fprintf(w, "  %-16s %-28s %s\n", e.Name, verdict, e.Doc)
	}
	for _, name := range ext.ServerConsumers {
		verdict, doc := "", "built with -tags "+ext.Tag+" (go run -tags "+ext.Tag+" ./cmd/fuzzrun consumer "+name+")"
		if ext.Registered != nil {
			if i := slices.IndexFunc(ext.Registered.Consumers, func(c ext.Consumer) bool { return c.Name == name }); i >= 0 {
				e := ext.Registered.Consumers[i]
				verdict, doc = "correct", e.Doc
				if e.Law != "" {
					verdict = "broken: " + e.Law
				}
			}
		}
		fmt.Fprintf(w, "  %-16s %-28s %s\n", name, verdict, doc)
	}
	for _, name := range slices.Sorted(maps.Keys(consumerSchemes)) {
		fmt.Fprintf(w, "  %s:ARG  %s\n", name, consumerSchemeDocs[name])
	}
}

// dbFlag is the -db flag that picks the run's database again ("" for the
// default, sqlite).
func (o *options) dbFlag() string {
	if o.db == "" || o.db == "sqlite" {
		return ""
	}
	return " -db " + o.db
}

// dbOptions are the consumertest options of -db and -sqlite: on SQLite,
// the settings given, else an example's own.
func (o *options) dbOptions() []consumerharness.Option {
	if o.db == "postgres" {
		return []consumerharness.Option{consumerharness.Postgres(o.dbDSN)}
	}
	if o.sqliteSet {
		return []consumerharness.Option{consumerharness.SQLite(o.sqlite)}
	}
	if e, ok := catalog.Lookup(o.consumer); ok {
		return e.Options()
	}
	return nil
}
