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
	"github.com/idemcheck/idemcheck/faults/gen"
	"github.com/idemcheck/idemcheck/faults/scenario"
	"github.com/idemcheck/idemcheck/impl/system"
	"github.com/idemcheck/idemcheck/internal/consumerharness"
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
	mutants   bool
	runs      int
	batch     int
	html      string
	every     time.Duration
	// weights and swarm: how a consumption campaign draws its steps
	// (-weights, -swarm; gen.Config).
	weights gen.Weights
	swarm   bool
	// off switches laws off, "property/law" -> the reason (-off LAW=REASON).
	off       map[string]string
	broker    string // fuzzrun broker: a live broker campaign (broker.go)
	explore   bool   // fuzzrun explore, or consumer -explore: the model checker (explore.go)
	exploreOp explore.Options
	consumer  string // fuzzrun consumer, or broker -consumer: a team's consumer (consumer.go)
	db        string // -db: the database of a consumer run (consumer.go)
	dbDSN     string // the DSN of -db postgres
	sqlite    string // -sqlite: the team's SQLite settings (DSN query parameters)
	sqliteSet bool   // -sqlite was given

	// depthGiven: -depth bounds the exploration; without it the search
	// deepens until the state space is exhausted or a budget runs out.
	depthGiven bool
	// maxMemory is the memory budget of a search (-max-memory), bytes.
	maxMemory int64

	// cexplore: fuzzrun consumer C -explore, a model check of the consumer
	// (consumer_explore.go).
	cexplore *consumerExplore

	// projection: fuzzrun explore -projection, every delivery order of each of
	// projHistories with up to projCopies copies (explore_projection.go).
	projection    bool
	projCopies    int
	projHistories []explore.NamedHistory

	// positional are the command's arguments after its flags.
	positional []string

	// workerIndex: this process is this worker of a campaign or a mutation
	// benchmark started by a parent fuzzrun (the hidden worker command).
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

// rawFlags are the values of a command's flags, as strings, so that every
// message names the flag and the value in the same words:
// `-duration: "abc" is not a duration`. A flag the command does not have
// keeps its default.
type rawFlags struct {
	duration, checks, seed, workers, property, target, runs, batch, every, weights, maxMemory string
	widx                                                                                      int
	offs                                                                                      []string
	ef                                                                                        exploreFlags
	cex                                                                                       consumerExploreFlags
}

// newFlags are the options and raw values before a command line is read:
// every flag at its default.
func newFlags() (*options, *rawFlags) {
	o := &options{db: "sqlite"}
	r := &rawFlags{
		duration: defaultDuration.String(), workers: strconv.Itoa(runtime.NumCPU()), property: "*", target: "reference",
		runs: strconv.Itoa(defaultRuns), batch: strconv.Itoa(defaultBatch), every: "5s",
		ef:  exploreFlags{events: "ok", groups: "1", groupWorkers: "2", nodes: "1", steps: "full", copies: "2"},
		cex: defaultConsumerExploreFlags(),
	}
	return o, r
}

// flagSet is the flags of one command: a flag.FlagSet holding its flags
// alone, bound to the options and raw values it fills, and their help in
// the order of the command's -h.
type flagSet struct {
	*flag.FlagSet
	cmd   string
	o     *options
	r     *rawFlags
	names []string
}

// str defines the string flag name, its default the value *p holds.
func (f *flagSet) str(p *string, name string) {
	f.StringVar(p, name, *p, f.helpOf(name))
	f.names = append(f.names, name)
}

// boolean defines the boolean flag name.
func (f *flagSet) boolean(p *bool, name string) {
	f.BoolVar(p, name, *p, f.helpOf(name))
	f.names = append(f.names, name)
}

// helpOf is the help of flag name in this command: flagHelp's
// "command.flag", else its "flag".
func (f *flagSet) helpOf(name string) string {
	if h, ok := flagHelp[f.cmd+"."+name]; ok {
		return h
	}
	return flagHelp[name]
}

// The flags several commands share.

func (f *flagSet) duration()     { f.str(&f.r.duration, "duration") }
func (f *flagSet) checks()       { f.str(&f.r.checks, "checks") }
func (f *flagSet) seed()         { f.str(&f.r.seed, "seed") }
func (f *flagSet) workers()      { f.str(&f.r.workers, "workers") }
func (f *flagSet) property()     { f.str(&f.r.property, "property") }
func (f *flagSet) target()       { f.str(&f.r.target, "target") }
func (f *flagSet) batch()        { f.str(&f.r.batch, "batch") }
func (f *flagSet) runs()         { f.str(&f.r.runs, "runs") }
func (f *flagSet) progress()     { f.str(&f.r.every, "progress-every") }
func (f *flagSet) maxMemory()    { f.str(&f.r.maxMemory, "max-memory") }
func (f *flagSet) corpus()       { f.str(&f.o.corpusDir, "corpus") }
func (f *flagSet) html()         { f.str(&f.o.html, "html") }
func (f *flagSet) json()         { f.boolean(&f.o.json, "json") }
func (f *flagSet) verbose()      { f.boolean(&f.o.verbose, "v") }
func (f *flagSet) replay()       { f.str(&f.o.replay, "replay") }
func (f *flagSet) budget()       { f.duration(); f.checks(); f.seed(); f.workers() }
func (f *flagSet) events()       { f.str(&f.r.ef.events, "events") }
func (f *flagSet) groupWorkers() { f.str(&f.r.ef.groupWorkers, "group-workers") }
func (f *flagSet) noPOR()        { f.boolean(&f.r.ef.noPOR, "no-por") }
func (f *flagSet) generatorMix() { f.str(&f.r.weights, "weights"); f.boolean(&f.o.swarm, "swarm") }
func (f *flagSet) outputs(v bool) {
	f.corpus()
	f.html()
	f.json()
	if v {
		f.verbose()
	}
}

// off defines -off, repeated for each law.
func (f *flagSet) off() {
	f.Func("off", f.helpOf("off"), func(v string) error { f.r.offs = append(f.r.offs, v); return nil })
	f.names = append(f.names, "off")
}

// validate reads and checks the raw values into o, for command c; given
// are the flags the command line set.
func (o *options) validate(c *command, r *rawFlags, given map[string]bool) error {
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
	// A team's consumer is drawn from the kinds of its own world (fail,
	// no skew), under the same weights type.
	parseWeights := gen.ParseWeights
	if c.name == "consumer" {
		parseWeights = consumerharness.ParseWeights
	}
	if o.weights, err = parseWeights(r.weights); err != nil {
		return usagef("-weights: %v", err)
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
	if c.check != nil {
		return c.check(o, r, given)
	}
	return nil
}

// checkBudget rejects a campaign that would never end.
func (o *options) checkBudget() error {
	if o.duration == 0 && o.checks == 0 {
		return usagef("-duration: 0 (no time limit) needs -checks, or the campaign would never end")
	}
	return nil
}

// parseOff reads the -off values: each LAW=REASON, LAW a law of some
// property ("property/law", as fuzzrun list names them) and REASON not empty.
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

// ofKind are the properties of ps of kind k.
func ofKind(ps []properties.Property, k scenario.Kind) []properties.Property {
	return slices.DeleteFunc(slices.Clone(ps), func(p properties.Property) bool { return p.Kind != k })
}

func propertyNames(ps []properties.Property) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.Name
	}
	return out
}
