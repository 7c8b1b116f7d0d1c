package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"path"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/idemcheck/idemcheck/explore"
	"github.com/idemcheck/idemcheck/faults/scenario"
	"github.com/idemcheck/idemcheck/impl/system"
	"github.com/idemcheck/idemcheck/properties"
)

// options are the parsed and validated flags.
type options struct {
	args      []string
	duration  time.Duration
	checks    int64
	seed      uint64
	seedGiven bool
	workers   int
	patterns  []string
	props     []properties.Property
	target    system.Target
	corpusDir string
	json      bool
	verbose   bool
	replay    string
	list      bool
	mutants   bool
	runs      int
	batch     int
	html      string
	every     time.Duration
	without   []scenario.Op
	// off switches laws off, "property/law" -> the reason (-off LAW=REASON).
	off       map[string]string
	broker    string // -broker: a live broker campaign (broker.go)
	explore   bool   // -explore: the model checker (explore.go)
	exploreOp explore.Options
	consumer  string // -consumer: a team's consumer (consumer.go)
	db        string // -db: the database of a -consumer run (consumer.go)
	dbDSN     string // the DSN of -db postgres

	// cexplore: -consumer C -explore, a model check of the consumer
	// (consumer_explore.go).
	cexplore *consumerExplore

	// projection: -explore -projection, every delivery order of each of
	// projHistories with up to projCopies copies (explore_projection.go).
	projection    bool
	projCopies    int
	projHistories []explore.NamedHistory

	// worker mode: this process is worker index of a campaign or a mutation
	// benchmark started by a parent fuzzrun (hidden flags).
	worker      bool
	workerIndex int
}

// Defaults of the flags.
const (
	defaultDuration     = 30 * time.Second
	defaultBatch        = 200
	externalBatch       = 10
	defaultRuns         = 5
	defaultMutantChecks = 5000
	defaultCorpus       = "corpus/cases"
	defaultHTML         = "fuzzrun-report.html"
	defaultMutantSeed   = 20261121
)

// usageError is a bad flag or value; run reports it and exits with 2.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error {
	return &usageError{fmt.Sprintf(format, args...)}
}

// parseFlags parses and validates args. Values are read as strings and
// parsed here, so that every message names the flag and the value in the
// same words: `-duration: "abc" is not a duration`.
func parseFlags(args []string) (*options, error) {
	fs := flag.NewFlagSet("fuzzrun", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	var (
		duration = fs.String("duration", defaultDuration.String(), "")
		checks   = fs.String("checks", "", "")
		seed     = fs.String("seed", "", "")
		workers  = fs.String("workers", strconv.Itoa(runtime.NumCPU()), "")
		property = fs.String("property", "*", "")
		target   = fs.String("target", "reference", "")
		runs     = fs.String("runs", strconv.Itoa(defaultRuns), "")
		batch    = fs.String("batch", strconv.Itoa(defaultBatch), "")
		every    = fs.String("progress-every", "5s", "")
		without  = fs.String("without", "", "")
		widx     = fs.Int("worker-index", 0, "")
		offs     []string
		depth    = fs.String("depth", "", "")
		events   = fs.String("events", "ok", "")
		groups   = fs.String("groups", "1", "")
		gworkers = fs.String("group-workers", "2", "")
		nodes    = fs.String("nodes", "1", "")
		steps    = fs.String("steps", "full", "")
		noSym    = fs.Bool("no-symmetry", false, "")
		noPOR    = fs.Bool("no-por", false, "")
		engine   = fs.String("engine", "", "")
		copies   = fs.String("copies", "2", "")
		history  = fs.String("history", "", "")
		o        = &options{}
	)
	fs.Func("off", "", func(v string) error { offs = append(offs, v); return nil })
	fs.StringVar(&o.corpusDir, "corpus", defaultCorpus, "")
	fs.StringVar(&o.html, "html", defaultHTML, "")
	fs.StringVar(&o.replay, "replay", "", "")
	fs.BoolVar(&o.json, "json", false, "")
	fs.BoolVar(&o.verbose, "v", false, "")
	fs.BoolVar(&o.list, "list", false, "")
	fs.BoolVar(&o.mutants, "mutants", false, "")
	fs.BoolVar(&o.worker, "worker", false, "")
	fs.StringVar(&o.broker, "broker", "", "")
	fs.BoolVar(&o.explore, "explore", false, "")
	fs.BoolVar(&o.projection, "projection", false, "")
	fs.StringVar(&o.consumer, "consumer", "", "")
	fs.StringVar(&o.db, "db", "sqlite", "")
	cexFlags := registerConsumerExplore(fs)
	if err := fs.Parse(args); err != nil {
		return nil, flagError(err)
	}
	if fs.NArg() > 0 {
		return nil, usagef("unexpected argument %q: fuzzrun takes flags only", fs.Arg(0))
	}
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	o.workerIndex = *widx
	o.args = args

	var err error
	if o.duration, err = time.ParseDuration(*duration); err != nil || o.duration < 0 {
		return nil, usagef("-duration: %q is not a duration (e.g. 30s, 10m, 0 for no time limit)", *duration)
	}
	if o.checks, err = parseCount("-checks", *checks, 0); err != nil {
		return nil, err
	}
	if *seed != "" {
		if o.seed, err = strconv.ParseUint(*seed, 10, 64); err != nil {
			return nil, usagef("-seed: %q is not an unsigned 64-bit integer", *seed)
		}
		o.seedGiven = true
	}
	n, err := parseCount("-workers", *workers, 1)
	if err != nil {
		return nil, err
	}
	if n > 256 {
		return nil, usagef("-workers: %d is more than 256", n)
	}
	o.workers = int(n)
	if n, err = parseCount("-runs", *runs, 1); err != nil {
		return nil, err
	}
	o.runs = int(n)
	if n, err = parseCount("-batch", *batch, 1); err != nil {
		return nil, err
	}
	o.batch = int(n)
	if o.every, err = time.ParseDuration(*every); err != nil || o.every <= 0 {
		return nil, usagef("-progress-every: %q is not a positive duration", *every)
	}
	if o.without, err = parseWithout(*without); err != nil {
		return nil, err
	}
	if o.patterns, o.props, err = selectProperties(*property); err != nil {
		return nil, err
	}
	if o.off, err = parseOff(offs); err != nil {
		return nil, err
	}
	if o.target, err = lookupTarget(*target); err != nil {
		return nil, err
	}
	batchSet := false
	fs.Visit(func(f *flag.Flag) { batchSet = batchSet || f.Name == "batch" })
	if !batchSet && isExternal(*target) {
		// A real database runs tens of checks a second, not thousands: small
		// batches keep progress live and the time budget honest.
		o.batch = externalBatch
	}
	if err := o.checkModes(given); err != nil {
		return nil, err
	}
	ef := exploreFlags{*depth, *events, *groups, *gworkers, *nodes, *steps, *engine, *noSym, *noPOR, *copies, *history}
	if err := o.parseConsumerExplore(given, ef, cexFlags); err != nil {
		return nil, err
	}
	if err := o.parseExplore(given, ef); err != nil {
		return nil, err
	}
	if err := o.checkConsumer(given); err != nil {
		return nil, err
	}
	return o, o.checkBroker(given)
}

// checkModes rejects combinations that cannot mean anything.
func (o *options) checkModes(given map[string]bool) error {
	modes := 0
	for _, m := range []bool{o.list, o.replay != "", o.mutants, o.explore} {
		if m {
			modes++
		}
	}
	if modes > 1 {
		return usagef("-list, -replay, -mutants and -explore are different modes; give one of them")
	}
	if len(o.off) > 0 && (o.mutants || o.replay != "" || o.list || o.broker != "" || o.explore) {
		return usagef("-off: laws are switched off in a campaign only, not with -mutants, -replay, -list, -broker or -explore")
	}
	if o.mutants && given["target"] {
		return usagef("-target: -mutants hunts every mutant; narrow it with -property instead")
	}
	if o.mutants && !given["seed"] {
		o.seed, o.seedGiven = defaultMutantSeed, true
	}
	if o.mutants && o.checks == 0 {
		o.checks = defaultMutantChecks
	}
	if !o.list && o.replay == "" && !o.mutants && !o.explore && !o.worker && o.duration == 0 && o.checks == 0 {
		return usagef("-duration: 0 (no time limit) needs -checks, or the campaign would never end")
	}
	return nil
}

// parseOff reads the -off values: each LAW=REASON, LAW a law of some
// property ("property/law", as -list names them) and REASON not empty.
func parseOff(values []string) (map[string]string, error) {
	if len(values) == 0 {
		return nil, nil
	}
	laws := properties.LawIDs(properties.All())
	off := map[string]string{}
	for _, v := range values {
		law, reason, ok := strings.Cut(v, "=")
		law, reason = strings.TrimSpace(law), strings.TrimSpace(reason)
		switch {
		case !ok:
			return nil, usagef("-off: %q is not LAW=REASON (e.g. -off 'hlc-laws/physical-bound=stamps are coarsened by design')", v)
		case !slices.Contains(laws, law):
			return nil, usagef("-off: %q is not a law; laws are named property/law, as -list shows them (e.g. hlc-laws/physical-bound)", law)
		case reason == "":
			return nil, usagef("-off: %s has no reason; say why the law does not apply (-off %s=REASON)", law, law)
		}
		if _, dup := off[law]; dup {
			return nil, usagef("-off: %s is switched off twice", law)
		}
		off[law] = reason
	}
	return off, nil
}

// parseCount parses a whole number of at least least; empty means 0.
func parseCount(name, s string, least int64) (int64, error) {
	if s == "" && least == 0 {
		return 0, nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, usagef("%s: %q is not a whole number", name, s)
	}
	if n < least {
		if least == 1 {
			return 0, usagef("%s: %d is not a positive number", name, n)
		}
		return 0, usagef("%s: %d is negative", name, n)
	}
	return n, nil
}

// flagError rewords the flag package's errors to name the flag first.
func flagError(err error) error {
	if errors.Is(err, flag.ErrHelp) {
		return err
	}
	msg := err.Error()
	if name, ok := strings.CutPrefix(msg, "flag provided but not defined: "); ok {
		return usagef("%s: no such flag", name)
	}
	if name, ok := strings.CutPrefix(msg, "flag needs an argument: "); ok {
		return usagef("%s: needs a value", name)
	}
	if rest, ok := strings.CutPrefix(msg, "invalid boolean value "); ok {
		// `invalid boolean value "x" for -json: parse error`
		val, flagName, _ := strings.Cut(rest, " for ")
		flagName, _, _ = strings.Cut(flagName, ":")
		return usagef("%s: %s is not true or false", flagName, val)
	}
	return usagef("%s", msg)
}

// selectProperties resolves -property: names or globs (path.Match syntax),
// comma-separated. Each pattern must match at least one property.
func selectProperties(spec string) ([]string, []properties.Property, error) {
	var patterns []string
	for _, p := range strings.Split(spec, ",") {
		if p = strings.TrimSpace(p); p != "" {
			patterns = append(patterns, p)
		}
	}
	if len(patterns) == 0 {
		return nil, nil, usagef("-property: %q names no property (see -list)", spec)
	}
	all := properties.All()
	picked := map[string]bool{}
	for _, pat := range patterns {
		if _, err := path.Match(pat, ""); err != nil {
			return nil, nil, usagef("-property: %q is not a valid glob", pat)
		}
		matched := false
		for _, p := range all {
			if ok, _ := path.Match(pat, p.Name); ok {
				picked[p.Name], matched = true, true
			}
		}
		if !matched {
			return nil, nil, usagef("-property: %q matches no property; the properties are %s", pat, strings.Join(propertyNames(all), ", "))
		}
	}
	var out []properties.Property
	for _, p := range all {
		if picked[p.Name] {
			out = append(out, p)
		}
	}
	return patterns, out, nil
}

func propertyNames(ps []properties.Property) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.Name
	}
	return out
}

// usage is the -h text.
const usage = `fuzzrun runs campaigns of the idemcheck harness: rapid draws scenarios,
plays them against a target, judges every property, shrinks each violation
and saves it in the corpus.

usage:
  fuzzrun [flags]                 a campaign (default: 30s, every property, the reference)
  fuzzrun -mutants [flags]        the mutation benchmark: hunt every mutant
  fuzzrun -replay FILE [flags]    replay a corpus file or a bare scenario
  fuzzrun -list                   list the properties, the targets and the consumers
  fuzzrun -consumer NAME [flags]  a campaign against a team's consumer (an example
                                  consumer by name, or SCHEME:ARG); with -replay FILE,
                                  replay one consumer-level case against it
  fuzzrun -explore -depth N       the model checker: every schedule of a small world
                                  up to N steps, breadth first (shortest counterexample)
  fuzzrun -explore -projection    every delivery order, with duplicates, of small
                                  causal histories, judged by the projection properties
  fuzzrun -consumer C -explore    model-check a team's consumer: every schedule within
                                  the bounds, or the shortest counterexample

flags:
  -duration D      time budget of the campaign (default 30s; 0: no limit, needs -checks)
  -checks N        check budget: campaign total (default: none), or max checks per
                   hunt with -mutants (default 5000)
  -seed N          base seed; the same seed, -checks, -workers and -batch draw the
                   same scenarios (default: random, printed; 20261121 with -mutants)
  -workers N       worker processes, one per core (default: the number of CPUs)
  -property P      property names or globs, comma-separated (default *)
  -target T        reference (default), a mutant's name, or a system under test:
                   sqlite, postgres, redis, exec:CMD (a store), exec-hlc:CMD (an
                   HLC), exec-projector:CMD (a projector); see -list
  -broker B[:C]    a campaign against a real broker instead: nats (embedded),
                   rabbitmq or kafka, optionally with a configuration; see -list;
                   with -consumer C, the team's consumer C is driven by the broker
                   (saves into corpus/brokers/consumers)
  -consumer C      a consumer campaign instead (see -list); saves into corpus/consumers
  -db D            the database of a -consumer run: sqlite (default, embedded) or
                   postgres (at IDEMCHECK_POSTGRES_DSN)
  -corpus DIR      where violations are saved (default corpus/cases, corpus/consumers
                   with -consumer; "" to not save)
  -html FILE       HTML report (default fuzzrun-report.html; "" for none)
  -json            print the report as JSON on stdout instead of the table
  -v               also print each counterexample's scenario as JSON (the corpus
                   file always holds it)
  -runs N          hunts (seeds) per mutant with -mutants (default 5)
  -batch N         checks per hunt in a campaign (default 200; 10 for sqlite,
                   postgres, redis and exec: targets; 1000 with -consumer -db postgres)
  -off LAW=REASON  switch a law off (e.g. hlc-laws/physical-bound=coarse stamps by
                   design): it is not judged, and every report records the reason;
                   repeat for more laws
  -without F,...   switch consumption faults off in the generator (crash, duplicate,
                   advance, skew, clock-step, cleanup, replay, produce-fail): the
                   coverage table then shows what the campaign never reached
  -progress-every D  interval of progress lines when stderr is not a terminal (default 5s)

explore flags (with -explore; -target, -property, -corpus, -json, -html and -workers apply):
  -depth N         the longest schedule explored (required, at least 1)
  -events F,...    the events, one fate each: ok, transient:N, poison; or a count
                   of ok events (default ok: one event)
  -groups N        consumer groups (default 1)
  -group-workers N workers per group (default 2)
  -nodes N         nodes, workers spread over them in turn (default 1)
  -steps S,...     the step menu: full (default), core, or kinds among produce,
                   produce-fail, duplicate[:N], deliver[:PICKS], step, crash,
                   advance[:MS], skew[:MS], clock-step[:MS], cleanup, replay
  -no-symmetry     do not fold interchangeable workers and events together
  -no-por          no partial-order reduction
  -engine E        compact: the reference's compact restatement, fastest (the
                   default for the reference when the world fits it); runner:
                   the target's own parts through the runner (any target)
  -workers N       goroutines expanding the frontier (default: the number of CPUs)

projection explore flags (with -explore -projection; -target, -property, -corpus,
-json and -html apply, the consumption world's flags above do not):
  -copies N        each event delivered 1 to N times, 1..10 (default 2)
  -history H       a history by name (skew, stepBack, ahead, delayed, burst) or a
                   projection scenario or corpus file, its replicas ignored
                   (default: all five)

consumer explore flags (with -consumer C -explore; -db, -corpus, -json, -html apply;
-duration and -checks are budgets: stopped early, the report says which bound was
fully explored):
  -events F,...    the events' fates: ok, transient:N, poison; or a count of ok
                   events (default 2)
  -group-workers N the consumer group's workers, 1..8 (default 2)
  -preemptions N   switches away from a worker mid-delivery, searched 0, 1, .. N
                   (default 2)
  -crashes N       crashes (default 1)
  -failures N      injected transient failures (default 1)
  -duplicates N    broker duplicates (default 1)
  -advances N      moves of time while a worker could move (default 0)
  -durations D,... amounts time may move by besides the broker's next deadline
  -replays N       replays of the stream (default 0)
  -max-steps N     cut a schedule this long and finish it with the drain (default 200)
  -no-por          no partial-order reduction
  -no-cache        no state caching (for a handler not deterministic in its inputs)

exit status: 0 nothing violated, 1 a violation found (or a mutant survived),
2 usage error, 3 the harness itself failed.
`
