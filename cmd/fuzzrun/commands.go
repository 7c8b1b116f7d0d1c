package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
)

// A command is one subcommand of fuzzrun: its own flag set (only the flags
// that mean something in it), its positional argument, its help.
type command struct {
	name string
	// arg names the positional argument ("" for none); the command needs
	// exactly one when it is set, one or more with many.
	arg     string
	many    bool
	summary string
	// define defines the command's flags on its set, in the order of its
	// help.
	define func(f *flagSet)
	// hidden commands are not in fuzzrun -h (the worker processes).
	hidden bool
	// help is the text after the flags in the command's -h.
	help string
	// setup sets the mode of o from the positional argument.
	setup func(o *options, arg string)
	// check validates what only this command's flags can get wrong
	// together, after the values common to all are read (validate).
	check func(o *options, r *rawFlags, given map[string]bool) error
	run   func(ctx context.Context, o *options, stdout, stderr io.Writer) int
	// tag, when not "", is the build tag the command needs: without it
	// the command answers a usage error naming the command to run instead.
	tag string
}

// commands are fuzzrun's subcommands, in the order of fuzzrun -h.
var commands = []*command{
	{
		name:    "campaign",
		summary: "a campaign: every property against a target (what fuzzrun with no command runs)",
		define: func(f *flagSet) {
			f.budget()
			f.property()
			f.target()
			f.off()
			f.generatorMix()
			f.batch()
			f.outputs(true)
			f.progress()
		},
		check: func(o *options, _ *rawFlags, _ map[string]bool) error { return o.checkBudget() },
		run:   runCampaign,
		help:  weightsHelp(),
	},
	{
		name:    "consumer",
		arg:     "NAME|SCHEME:ARG",
		summary: "a campaign against a team's consumer (an example consumer by name, or exec:COMMAND), or its model check with -explore",
		define: func(f *flagSet) {
			f.budget()
			f.str(&f.o.db, "db")
			f.str(&f.o.sqlite, "sqlite")
			f.str(&f.r.weights, "weights")
			f.batch()
			f.replay()
			f.outputs(false)
			f.progress()
			f.boolean(&f.o.explore, "explore")
			f.maxMemory()
			f.events()
			f.groupWorkers()
			f.consumerExplore()
			f.noPOR()
			f.boolean(&f.r.cex.noCache, "no-cache")
			f.consumerShard()
			f.boolean(&f.r.cex.noSymmetry, "no-symmetry")
		},
		setup: func(o *options, arg string) { o.consumer = arg },
		check: checkConsumer,
		run:   runConsumer,
		help:  consumerHelp,
	},
	{
		name:    "explore",
		summary: "the model checker over the reference world: every schedule, deeper and deeper (up to -depth), or every delivery order of small histories with -projection",
		define: func(f *flagSet) {
			f.str(&f.r.ef.depth, "depth")
			f.duration()
			f.maxMemory()
			f.events()
			f.str(&f.r.ef.groups, "groups")
			f.groupWorkers()
			f.str(&f.r.ef.nodes, "nodes")
			f.str(&f.r.ef.steps, "steps")
			f.boolean(&f.r.ef.noSymmetry, "no-symmetry")
			f.noPOR()
			f.str(&f.r.ef.engine, "engine")
			f.boolean(&f.o.projection, "projection")
			f.str(&f.r.ef.copies, "copies")
			f.str(&f.r.ef.history, "history")
			f.target()
			f.property()
			f.workers()
			f.outputs(true)
			f.progress()
		},
		setup: func(o *options, _ string) { o.explore = true },
		check: func(o *options, r *rawFlags, given map[string]bool) error { return o.parseExplore(given, r.ef) },
		run: func(ctx context.Context, o *options, stdout, stderr io.Writer) int {
			if o.projection {
				return runExploreProjection(ctx, o, stdout, stderr)
			}
			return runExplore(ctx, o, stdout, stderr)
		},
	},
	{
		name:    "merge",
		arg:     "CERT...",
		many:    true,
		summary: "combine the certificates of the N shards of a split model check (consumer -explore -shard i/N) into one verdict",
		define: func(f *flagSet) {
			f.json()
		},
		help: mergeHelp,
		run:  func(_ context.Context, o *options, stdout, stderr io.Writer) int { return runMerge(o, stdout, stderr) },
	},
	{
		name:    "broker",
		arg:     "BROKER[:CONFIG]",
		summary: "a live campaign against a real broker: nats (embedded), rabbitmq or kafka (kfake)",
		define: func(f *flagSet) {
			f.budget()
			f.target()
			f.str(&f.o.consumer, "consumer")
			f.replay()
			f.corpus()
			f.json()
			f.verbose()
		},
		setup: func(o *options, arg string) { o.broker = arg },
		check: func(o *options, _ *rawFlags, given map[string]bool) error { return o.checkBroker(given) },
		tag:   serversTag,
		run:   runBroker,
	},
	{
		name:    "mutants",
		summary: "the mutation benchmark: hunt every mutant, -runs times",
		define: func(f *flagSet) {
			f.checks()
			f.seed()
			f.workers()
			f.runs()
			f.batch()
			f.property()
			f.generatorMix()
			f.outputs(false)
			f.progress()
		},
		setup: func(o *options, _ string) { o.mutants = true },
		help:  weightsHelp(),
		check: func(o *options, _ *rawFlags, given map[string]bool) error {
			if !given["seed"] {
				o.seed, o.seedGiven = defaultMutantSeed, true
			}
			if o.checks == 0 {
				o.checks = defaultMutantChecks
			}
			return nil
		},
		run: runMutants,
	},
	{
		name:    "replay",
		arg:     "FILE",
		summary: "replay a corpus file or a bare scenario against a target",
		define: func(f *flagSet) {
			f.target()
			f.property()
			f.html()
			f.json()
		},
		setup: func(o *options, arg string) { o.replay = arg },
		run:   func(_ context.Context, o *options, stdout, stderr io.Writer) int { return runReplay(o, stdout, stderr) },
	},
	{
		name:    "list",
		summary: "list the properties and their laws, the targets, the brokers and the consumers",
		define: func(f *flagSet) {
			f.property()
			f.json()
		},
		run: func(_ context.Context, o *options, stdout, _ io.Writer) int { return runList(o, stdout) },
	},
	{
		// worker is a process of a campaign or a mutation benchmark, started
		// by a parent fuzzrun (protocol.go); not for people.
		name:   "worker",
		hidden: true,
		define: func(f *flagSet) {
			f.IntVar(&f.r.widx, "worker-index", 0, "")
			f.budget()
			f.property()
			f.target()
			f.off()
			f.generatorMix()
			f.batch()
			f.runs()
			f.boolean(&f.o.mutants, "mutants")
		},
		run: func(ctx context.Context, o *options, stdout, _ io.Writer) int { return runWorker(ctx, o, stdout) },
	},
}

func lookupCommand(name string) *command {
	for _, c := range commands {
		if c.name == name {
			return c
		}
	}
	return nil
}

// flags is a new flag set of c's flags, bound to o and r.
func (c *command) flags(o *options, r *rawFlags) *flagSet {
	f := &flagSet{FlagSet: flag.NewFlagSet("fuzzrun "+c.name, flag.ContinueOnError), cmd: c.name, o: o, r: r}
	f.SetOutput(io.Discard)
	f.Usage = func() {}
	c.define(f)
	return f
}

// has reports whether c has the flag name.
func (c *command) has(name string) bool {
	return c.flags(newFlags()).Lookup(name) != nil
}

// commandsOf lists the visible commands that have the flag name.
func commandsOf(name string) []string {
	var out []string
	for _, c := range commands {
		if !c.hidden && c.has(name) {
			out = append(out, c.name)
		}
	}
	return out
}

// parse parses args (the command's arguments, its name excluded) into
// options. The positional argument may come before or among the flags.
func (c *command) parse(args []string) (*options, error) {
	o, r := newFlags()
	fs := c.flags(o, r)
	var pos []string
	rest := args
	for {
		if err := fs.Parse(rest); err != nil {
			return nil, c.flagError(err)
		}
		if fs.NArg() == 0 {
			break
		}
		pos = append(pos, fs.Arg(0))
		rest = fs.Args()[1:]
	}
	switch {
	case c.arg == "" && len(pos) > 0:
		return nil, usagef("unexpected argument %q: fuzzrun %s takes flags only", pos[0], c.name)
	case c.arg != "" && len(pos) == 0:
		return nil, usagef("fuzzrun %s needs %s (fuzzrun %s %s [flags])", c.name, c.arg, c.name, c.arg)
	case len(pos) > 1 && !c.many:
		return nil, usagef("unexpected argument %q: fuzzrun %s takes one %s", pos[1], c.name, c.arg)
	}
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	o.positional = pos
	if c.setup != nil {
		arg := ""
		if len(pos) > 0 {
			arg = pos[0]
		}
		c.setup(o, arg)
	}
	if err := o.validate(c, r, given); err != nil {
		return nil, err
	}
	o.placeOutputs(c.name, given)
	return o, nil
}

// flagError rewords the flag package's error; a flag of another command
// names the command it belongs to.
func (c *command) flagError(err error) error {
	err = flagError(err)
	var ue *usageError
	if !errors.As(err, &ue) {
		return err
	}
	name, ok := strings.CutSuffix(ue.msg, ": no such flag")
	if !ok {
		return err
	}
	if owners := commandsOf(strings.TrimLeft(name, "-")); len(owners) > 0 {
		return usagef("%s: fuzzrun %s has no such flag; it is a flag of %s", name, c.name, joinCommands(owners))
	}
	return usagef("%s: fuzzrun %s has no such flag (see fuzzrun %s -h)", name, c.name, c.name)
}

func joinCommands(names []string) string {
	for i, n := range names {
		names[i] = "fuzzrun " + n
	}
	if len(names) == 1 {
		return names[0]
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}

// runContext is run under a context whose cancellation acts as Ctrl-C.
func runContext(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		return runCommand(ctx, lookupCommand("campaign"), nil, nil, stdout, stderr)
	}
	switch first := args[0]; {
	case first == "help" && len(args) > 1:
		if c := lookupCommand(args[1]); c != nil && !c.hidden {
			fmt.Fprint(stdout, c.usage())
			return exitOK
		}
		return say(stderr, exitUsage, "help: %q is not a command; the commands are %s", args[1], strings.Join(visibleCommands(), ", "))
	case first == "-h" || first == "-help" || first == "--help" || first == "help":
		fmt.Fprint(stdout, topUsage())
		return exitOK
	case strings.HasPrefix(first, "-"):
		// Flags without a command are the campaign's, but a flag that once
		// chose the mode is a command now.
		if msg := commandAsFlag(args); msg != "" {
			return say(stderr, exitUsage, "%s", msg)
		}
		return runCommand(ctx, lookupCommand("campaign"), args, args, stdout, stderr)
	}
	c := lookupCommand(args[0])
	if c == nil {
		return say(stderr, exitUsage, "%q is not a command; the commands are %s (run fuzzrun -h)", args[0], strings.Join(visibleCommands(), ", "))
	}
	return runCommand(ctx, c, args[1:], args, stdout, stderr)
}

// runCommand parses args for c and runs it; shown is the command line the
// reports quote (after "fuzzrun").
func runCommand(ctx context.Context, c *command, args, shown []string, stdout, stderr io.Writer) int {
	if c.tag != "" && !tagged(c.tag) {
		return notBuilt(stderr, "fuzzrun "+c.name, c.tag, shown)
	}
	o, err := c.parse(args)
	if te := (*tagError)(nil); errors.As(err, &te) {
		return notBuilt(stderr, te.what, te.tag, shown)
	}
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprint(stdout, c.usage())
		return exitOK
	}
	if err != nil {
		return say(stderr, exitUsage, "%v\n(run fuzzrun %s -h for its flags)", err, c.name)
	}
	o.args = shown
	return c.run(ctx, o, stdout, stderr)
}

// tagError is something a command line asks for that only a build with
// tag has; runCommand says the command to run instead.
type tagError struct{ what, tag string }

func (e *tagError) Error() string { return e.what + " needs -tags " + e.tag }

// shellJoin quotes args for a shell, for a command line to copy.
func shellJoin(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		q[i] = shellQuote(a)
	}
	return strings.Join(q, " ")
}

func visibleCommands() []string {
	var out []string
	for _, c := range commands {
		if !c.hidden {
			out = append(out, c.name)
		}
	}
	return out
}

// modeFlags are the flags that chose the mode before fuzzrun had commands,
// each a command now, and whether each took a value (the command's
// positional argument).
var modeFlags = map[string]bool{"list": false, "mutants": false, "explore": false, "consumer": true, "broker": true, "replay": true}

// commandAsFlag is, for a command line of campaign flags that holds a mode
// flag (`fuzzrun -consumer adr -checks 5`), the message that names the
// command line to write instead (`fuzzrun consumer adr -checks 5`); "" for
// a command line without one. A broker or a consumer is the command when
// given, its other mode flags being flags of that command; else the first.
func commandAsFlag(args []string) string {
	type hit struct {
		name, value string
		at, end     int
	}
	var hits []hit
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			break
		}
		if !strings.HasPrefix(a, "-") {
			continue
		}
		name, value, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		takesValue, ok := modeFlags[name]
		if !ok {
			continue
		}
		h := hit{name: name, at: i, end: i + 1}
		if takesValue {
			switch {
			case hasValue:
				h.value = value
			case i+1 < len(args):
				h.value, h.end = args[i+1], i+2
			}
		}
		hits = append(hits, h)
		i = h.end - 1
	}
	if len(hits) == 0 {
		return ""
	}
	chosen := hits[0]
	for _, main := range []string{"consumer", "broker"} {
		for _, h := range hits {
			if h.name == main {
				chosen = h
			}
		}
	}
	line := "fuzzrun " + chosen.name
	switch c := lookupCommand(chosen.name); {
	case chosen.value != "":
		line += " " + shellQuote(chosen.value)
	case c.arg != "":
		line += " " + c.arg // the value is missing: name what it is
	}
	if rest := append(slices.Clone(args[:chosen.at]), args[chosen.end:]...); len(rest) > 0 {
		line += " " + shellJoin(rest)
	}
	return fmt.Sprintf("-%s is a command now: %s", chosen.name, line)
}

// usage is the command's -h text: its usage line and its flags only.
func (c *command) usage() string {
	var b strings.Builder
	line := "fuzzrun " + c.name
	if c.arg != "" {
		line += " " + c.arg
	}
	fmt.Fprintf(&b, "usage: %s [flags]\n\n%s.\n", line, c.summary)
	if c.tag != "" {
		fmt.Fprintf(&b, "Built only with -tags %s: go run -tags %s ./cmd/fuzzrun %s ...\n", c.tag, c.tag, c.name)
	}
	b.WriteString("\nflags:\n")
	fs := c.flags(newFlags())
	for _, name := range fs.names {
		b.WriteString(fs.Lookup(name).Usage)
	}
	if c.help != "" {
		b.WriteString("\n" + c.help)
	}
	if fs.Lookup("corpus") != nil || fs.Lookup("html") != nil {
		b.WriteString("\n" + outputHelp())
	}
	b.WriteString("\n" + exitHelp)
	return b.String()
}

// topUsage is fuzzrun -h: the commands.
func topUsage() string {
	var b strings.Builder
	b.WriteString(`fuzzrun runs campaigns of the idemcheck harness: rapid draws scenarios,
plays them against a target, judges every property, shrinks each violation
and saves it in the corpus.

usage:
  fuzzrun                        the default campaign: 30s, every property, the reference
  fuzzrun COMMAND [ARG] [flags]

commands:
`)
	for _, c := range commands {
		if c.hidden {
			continue
		}
		line := c.name
		if c.arg != "" {
			line += " " + c.arg
		}
		fmt.Fprintf(&b, "  %-24s %s\n", line, c.summary)
	}
	fmt.Fprintf(&b, `
Run fuzzrun COMMAND -h for the flags of a command. fuzzrun broker, and the
targets sqlite, sqlite-file, postgres and redis, are built only with
-tags %s (go run -tags %s ./cmd/fuzzrun ...).

`, serversTag, serversTag)
	b.WriteString(exitHelp)
	return b.String()
}

// outputHelp says where the files no flag placed go.
func outputHelp() string {
	return fmt.Sprintf(`Counterexamples and reports not placed by -corpus or -html are written under
the cache directory, never into the working tree, and every file written is
named in the output. The cache directory: %s
($%s changes it).
`, outputDir(), outputEnv)
}

const exitHelp = `exit status: 0 nothing violated in the work asked for, 1 a violation found (or a
mutant survived), 2 usage error, 3 the harness itself failed, 4 inconclusive:
nothing violated but nothing proven either (interrupted by Ctrl-C or SIGTERM,
no scenario played, a selected property never checked, or a search stopped by
its time or memory budget short of the bound it was given).
`

const consumerHelp = `With -explore, -duration, -max-memory and -checks are budgets of the model check
(10m, 3/4 of the memory and none by default): stopped early, the report says
which bound was fully explored, and the exit status is 4 (not verified). The
bounds default to what an example's bug needs.
`

// flagHelp is the help of each flag; "command.flag" overrides it in one
// command.
var flagHelp = map[string]string{
	"duration": "  -duration D      time budget (default 30s; 0: no limit, needs -checks)\n",
	"checks":   "  -checks N        check budget, in total (default: none)\n",
	"seed": "  -seed N          base seed; the same seed, -checks, -workers and -batch draw the\n" +
		"                   same scenarios (default: random, printed)\n",
	"workers":  "  -workers N       worker processes, one per core (default: the number of CPUs)\n",
	"property": "  -property P      property names or globs, comma-separated (default *)\n",
	"target": "  -target T        reference (default), a mutant's name, or a system under test:\n" +
		"                   exec:CMD (a store), exec-hlc:CMD (an HLC), exec-projector:CMD\n" +
		"                   (a projector); with -tags servers also sqlite, sqlite-file,\n" +
		"                   postgres, redis; see fuzzrun list\n",
	"corpus": "  -corpus DIR      where violations are saved, e.g. corpus/cases to add them to the\n" +
		"                   regression corpus (default: corpus/cases under the cache directory,\n" +
		"                   see below; \"\" to not save)\n",
	"html": "  -html FILE       HTML report (default: reports/COMMAND.html under the cache\n" +
		"                   directory, see below; \"\" for none)\n",
	"json": "  -json            print the report as JSON on stdout instead of the table\n",
	"v": "  -v               also print each counterexample's scenario as JSON (the corpus\n" +
		"                   file always holds it)\n",
	"batch": "  -batch N         checks per hunt (default 200; 10 for sqlite, postgres, redis and\n" +
		"                   exec: targets)\n",
	"off": "  -off LAW=REASON  switch a law off (e.g. hlc-laws/physical-bound=coarse stamps by\n" +
		"                   design): it is not judged, and every report records the reason;\n" +
		"                   repeat for more laws\n",
	"weights": "  -weights K=N,... how often the consumption generator draws each kind of step,\n" +
		"                   e.g. crash=0,skew=3 (0: never); see below\n",
	"consumer.weights": "  -weights K=N,... how often the consumer's scenarios draw each kind of step:\n" +
		"                   run, fail, crash, advance, duplicate, replay (0: never), e.g.\n" +
		"                   crash=6,replay=0; the kinds not named keep their defaults\n",
	"swarm": "  -swarm           swarm mode: each scenario plays its own random mix of the fault\n" +
		"                   kinds of non-zero weight, reaching combinations the full mix dilutes\n",
	"progress-every": "  -progress-every D  interval of progress lines when stderr is not a terminal (default 5s)\n",
	"runs":           "  -runs N          hunts (seeds) per mutant (default 5)\n",

	"mutants.checks": "  -checks N        max checks per hunt (default 5000)\n",
	"mutants.seed":   "  -seed N          base seed (default 20261121)\n",

	"replay.target":   "  -target T        the target to play it against (default reference)\n",
	"replay.property": "  -property P      the properties to judge it by (default *: every one of its kind)\n",
	"list.property":   "  -property P      list only these properties (default *)\n",
	"list.json":       "  -json            print the lists as JSON\n",

	"depth": "  -depth N         the longest schedule explored (default: none, deeper and deeper until\n" +
		"                   no new state is reached or the time or memory budget runs out)\n",
	"explore.duration": "  -duration D      time budget of the search (default 30s; 0: no time limit)\n",
	"max-memory": "  -max-memory SIZE memory budget of the search: it stops, saying how far it got, when\n" +
		"                   the process holds this much (e.g. 2GB, 512MB; default: 3/4 of the\n" +
		"                   machine's memory); past a quarter of it, the frontier being built\n" +
		"                   is written to a temporary file and read back in order\n",
	"consumer.max-memory": "  -max-memory SIZE with -explore: memory budget of the model check (e.g. 2GB; default:\n" +
		"                   3/4 of the machine's memory)\n",
	"events": "  -events F,...    the events, one fate each: ok, transient:N, poison; or a count\n" +
		"                   of ok events (default ok: one event)\n",
	"groups":        "  -groups N        consumer groups (default 1)\n",
	"group-workers": "  -group-workers N workers per group (default 2)\n",
	"nodes":         "  -nodes N         nodes, workers spread over them in turn (default 1)\n",
	"steps": "  -steps S,...     the step menu: full (default), core, or kinds among produce,\n" +
		"                   produce-fail, duplicate[:N], deliver[:PICKS], step, crash,\n" +
		"                   advance[:MS], skew[:MS], clock-step[:MS], cleanup, replay\n",
	"no-symmetry": "  -no-symmetry     do not fold interchangeable workers and events together\n",
	"no-por":      "  -no-por          no partial-order reduction\n",
	"engine": "  -engine E        compact: the reference's compact restatement, fastest (the\n" +
		"                   default for the reference when the world fits it); runner:\n" +
		"                   the target's own parts through the runner (any target)\n",
	"projection": "  -projection      every delivery order, with duplicates, of small causal\n" +
		"                   histories, judged by the projection properties (no -depth)\n",
	"copies": "  -copies N        with -projection: each event delivered 1 to N times, 1..10\n" +
		"                   (default 2)\n",
	"history": "  -history H       with -projection: a history by name (skew, stepBack, ahead,\n" +
		"                   delayed, burst) or a projection scenario or corpus file, its\n" +
		"                   replicas ignored (default: all five)\n",
	"explore.workers": "  -workers N       goroutines expanding the frontier (default: the number of CPUs)\n",
	"explore.corpus": "  -corpus DIR      where counterexamples are saved (default: corpus/cases under the\n" +
		"                   cache directory, see below; \"\" to not save)\n",

	"consumer.duration": "  -duration D      time budget (default 30s; 0: no limit, needs -checks); with -explore,\n" +
		"                   of the model check (default 10m; 0: no time limit)\n",
	"consumer.checks":  "  -checks N        scenarios in total (default: none); schedules with -explore\n",
	"consumer.seed":    "  -seed N          base seed (default: random, printed)\n",
	"consumer.workers": "  -workers N       with -explore: goroutines of the search (default: the number of CPUs)\n",
	"sqlite": "  -sqlite PARAMS   the SQLite settings the consumer runs with, as its DSN's query\n" +
		"                   parameters (_pragma=busy_timeout(5000)&_txlock=immediate); default:\n" +
		"                   an example's own, else SQLite's and the driver's\n",
	"db": "  -db D            the consumer's database: sqlite (default, embedded) or postgres\n" +
		"                   (at IDEMCHECK_POSTGRES_DSN)\n",
	"consumer.batch":  "  -batch N         scenarios per hunt (default 200; 1000 with -db postgres)\n",
	"consumer.replay": "  -replay FILE     replay one consumer-level corpus case against the consumer\n",
	"consumer.corpus": "  -corpus DIR      where counterexamples are saved (default: corpus/consumers under the\n" +
		"                   cache directory, see below; \"\" to not save)\n",
	"explore": "  -explore         model-check the consumer: every schedule within the bounds\n" +
		"                   below, or the shortest counterexample\n",
	"consumer.events": "  -events F,...    with -explore: the events' fates: ok, same, transient:N, poison; or a\n" +
		"                   count of ok events (default ok,same, then two more searches:\n" +
		"                   ok,poison, and one event with time moving; any bound flag\n" +
		"                   makes one search of what the flags say)\n",
	"consumer.group-workers": "  -group-workers N with -explore: the consumer group's workers, 1..8 (default 2)\n",
	"preemptions": "  -preemptions N   with -explore: switches away from a worker mid-delivery,\n" +
		"                   searched 0, 1, .. N (default 1)\n",
	"crashes":         "  -crashes N       with -explore: crashes (default 1)\n",
	"failures":        "  -failures N      with -explore: injected transient failures (default 1)\n",
	"duplicates":      "  -duplicates N    with -explore: broker duplicates (default 1)\n",
	"advances":        "  -advances N      with -explore: moves of time while a worker could move (default 0)\n",
	"durations":       "  -durations D,... with -explore: amounts time may move by besides the broker's next deadline\n",
	"replays":         "  -replays N       with -explore: replays of the stream (default 0); on a log, resets of the offsets\n",
	"rebalances":      "  -rebalances N    with -explore, on a log: rebalances of the group (default 1)\n",
	"partitions":      "  -partitions N    with -explore, on a log: partitions of the topic (default 1)\n",
	"max-steps":       "  -max-steps N     with -explore: cut a schedule this long and finish it with the drain (default 200)\n",
	"consumer.no-por": "  -no-por          with -explore: no partial-order reduction\n",
	"no-cache":        "  -no-cache        with -explore: no state caching (a handler not deterministic in its inputs)\n",
	"shard": "  -shard i/N       with -explore: search shard i of N only (0 <= i < N), the schedules\n" +
		"                   below every N-th prefix of each bound's tree; fuzzrun merge combines\n" +
		"                   the N certificates into the verdict\n",
	"certificate": "  -certificate F   with -shard: where the shard's certificate goes (default:\n" +
		"                   certificate-NAME-i-of-N.json in the working directory)\n",
	"merge.json":           "  -json            print the merged verdict as JSON\n",
	"consumer.no-symmetry": "  -no-symmetry     with -explore: do not fold a Handler's interchangeable workers together\n",

	"broker.target": "  -target T        the store and pipeline under the broker (default reference)\n",
	"consumer": "  -consumer C      drive a team's consumer C (as fuzzrun consumer names it) by the\n" +
		"                   broker instead (kept on embedded SQLite; saves into\n" +
		"                   corpus/brokers/consumers under the cache directory); a log\n" +
		"                   consumer (logoffsets) runs live over kafka only, -checks runs\n" +
		"                   of 3 faults each, reported as text, nothing saved\n",
	"broker.replay": "  -replay FILE     replay one broker corpus case, re-run up to the confirmation count\n",
	"broker.corpus": "  -corpus DIR      where confirmed violations are saved (default: corpus/brokers under\n" +
		"                   the cache directory, see below)\n",
}
