package main

import (
	"errors"
	"flag"
	"fmt"
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
	sqlite    string // -sqlite: the team's SQLite settings (DSN query parameters)
	sqliteSet bool   // -sqlite was given

	// depthGiven: -depth bounds the exploration; without it the search
	// deepens until the state space is exhausted or a budget runs out.
	depthGiven bool
	// maxMemory is the memory budget of a search (-max-memory), bytes.
	maxMemory int64

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
	defaultMutantSeed   = 20261121
)

// usageError is a bad flag or value; run reports it and exits with 2.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error {
	return &usageError{fmt.Sprintf(format, args...)}
}

// rawFlags are the values of every flag of every command, as strings, so
// that every message names the flag and the value in the same words:
// `-duration: "abc" is not a duration`.
type rawFlags struct {
	duration, checks, seed, workers, property, target, runs, batch, every, without, maxMemory string
	widx                                                                                      int
	offs                                                                                      []string
	ef                                                                                        exploreFlags
	cex                                                                                       *consumerExploreFlags
}

// defineAll defines every flag of every command on one set, bound to o
// and r; each command copies its own flags from it (commands.go).
func defineAll(o *options, r *rawFlags) *flag.FlagSet {
	fs := flag.NewFlagSet("fuzzrun", flag.ContinueOnError)
	fs.StringVar(&r.duration, "duration", defaultDuration.String(), "")
	fs.StringVar(&r.checks, "checks", "", "")
	fs.StringVar(&r.seed, "seed", "", "")
	fs.StringVar(&r.workers, "workers", strconv.Itoa(runtime.NumCPU()), "")
	fs.StringVar(&r.property, "property", "*", "")
	fs.StringVar(&r.target, "target", "reference", "")
	fs.StringVar(&r.runs, "runs", strconv.Itoa(defaultRuns), "")
	fs.StringVar(&r.batch, "batch", strconv.Itoa(defaultBatch), "")
	fs.StringVar(&r.every, "progress-every", "5s", "")
	fs.StringVar(&r.without, "without", "", "")
	fs.StringVar(&r.maxMemory, "max-memory", "", "")
	fs.IntVar(&r.widx, "worker-index", 0, "")
	fs.StringVar(&r.ef.depth, "depth", "", "")
	fs.StringVar(&r.ef.events, "events", "ok", "")
	fs.StringVar(&r.ef.groups, "groups", "1", "")
	fs.StringVar(&r.ef.groupWorkers, "group-workers", "2", "")
	fs.StringVar(&r.ef.nodes, "nodes", "1", "")
	fs.StringVar(&r.ef.steps, "steps", "full", "")
	fs.BoolVar(&r.ef.noSymmetry, "no-symmetry", false, "")
	fs.BoolVar(&r.ef.noPOR, "no-por", false, "")
	fs.StringVar(&r.ef.engine, "engine", "", "")
	fs.StringVar(&r.ef.copies, "copies", "2", "")
	fs.StringVar(&r.ef.history, "history", "", "")
	fs.Func("off", "", func(v string) error { r.offs = append(r.offs, v); return nil })
	// -corpus and -html not given: placeOutputs (outputs.go).
	fs.StringVar(&o.corpusDir, "corpus", "", "")
	fs.StringVar(&o.html, "html", "", "")
	fs.StringVar(&o.replay, "replay", "", "")
	fs.BoolVar(&o.json, "json", false, "")
	fs.BoolVar(&o.verbose, "v", false, "")
	fs.BoolVar(&o.mutants, "mutants", false, "")
	fs.BoolVar(&o.explore, "explore", false, "")
	fs.BoolVar(&o.projection, "projection", false, "")
	fs.StringVar(&o.consumer, "consumer", "", "")
	fs.StringVar(&o.db, "db", "sqlite", "")
	fs.StringVar(&o.sqlite, "sqlite", "", "")
	r.cex = registerConsumerExplore(fs)
	return fs
}

// validate reads and checks the raw values into o; given are the flags
// the command line set.
func (o *options) validate(r *rawFlags, given map[string]bool) error {
	o.workerIndex = r.widx
	var err error
	if o.duration, err = time.ParseDuration(r.duration); err != nil || o.duration < 0 {
		return usagef("-duration: %q is not a duration (e.g. 30s, 10m, 0 for no time limit)", r.duration)
	}
	if o.checks, err = parseCount("-checks", r.checks, 0); err != nil {
		return err
	}
	if r.seed != "" {
		if o.seed, err = strconv.ParseUint(r.seed, 10, 64); err != nil {
			return usagef("-seed: %q is not an unsigned 64-bit integer", r.seed)
		}
		o.seedGiven = true
	}
	n, err := parseCount("-workers", r.workers, 1)
	if err != nil {
		return err
	}
	if n > 256 {
		return usagef("-workers: %d is more than 256", n)
	}
	o.workers = int(n)
	if n, err = parseCount("-runs", r.runs, 1); err != nil {
		return err
	}
	o.runs = int(n)
	if n, err = parseCount("-batch", r.batch, 1); err != nil {
		return err
	}
	o.batch = int(n)
	if o.every, err = time.ParseDuration(r.every); err != nil || o.every <= 0 {
		return usagef("-progress-every: %q is not a positive duration", r.every)
	}
	if o.without, err = parseWithout(r.without); err != nil {
		return err
	}
	o.maxMemory = defaultMaxMemory()
	if given["max-memory"] {
		if o.maxMemory, err = parseSize(r.maxMemory); err != nil {
			return usagef("-max-memory: %v", err)
		}
	}
	if o.patterns, o.props, err = selectProperties(r.property); err != nil {
		return err
	}
	if o.off, err = parseOff(r.offs); err != nil {
		return err
	}
	if o.target, err = lookupTarget(r.target); err != nil {
		return err
	}
	if !given["batch"] && isExternal(r.target) {
		// A real database runs tens of checks a second, not thousands: small
		// batches keep progress live and the time budget honest.
		o.batch = externalBatch
	}
	if err := o.checkModes(given); err != nil {
		return err
	}
	if err := o.parseConsumerExplore(given, r.ef, r.cex); err != nil {
		return err
	}
	if err := o.parseExplore(given, r.ef); err != nil {
		return err
	}
	if err := o.checkConsumer(given); err != nil {
		return err
	}
	return o.checkBroker(given)
}

// checkModes rejects combinations that cannot mean anything.
func (o *options) checkModes(given map[string]bool) error {
	var modes []string
	for _, m := range []struct {
		flag string
		on   bool
	}{{"-list", o.list}, {"-replay", o.replay != ""}, {"-mutants", o.mutants}, {"-explore", o.explore}} {
		if m.on {
			modes = append(modes, m.flag)
		}
	}
	if len(modes) > 1 {
		what := map[string]string{"-list": "-list lists", "-replay": "-replay FILE plays one saved case",
			"-mutants": "-mutants hunts every mutant", "-explore": "-explore model-checks"}
		var says []string
		for _, m := range modes {
			says = append(says, what[m])
		}
		return usagef("%s are different modes (%s); give one of them", strings.Join(modes, " and "), strings.Join(says, ", "))
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
			return nil, usagef("-off: %q is not a law; laws are named property/law, as fuzzrun list shows them (e.g. hlc-laws/physical-bound)", law)
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
		return nil, nil, usagef("-property: %q names no property (see fuzzrun list)", spec)
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
