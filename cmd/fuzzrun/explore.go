package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/idemcheck/idemcheck/corpus"
	"github.com/idemcheck/idemcheck/explore"
	"github.com/idemcheck/idemcheck/faults/runner"
	"github.com/idemcheck/idemcheck/faults/scenario"
	"github.com/idemcheck/idemcheck/impl/system"
	"github.com/idemcheck/idemcheck/properties"
	"github.com/idemcheck/idemcheck/report"
)

// exploreFlags are the raw values of the -explore flags.
type exploreFlags struct {
	depth, events, groups, groupWorkers, nodes, steps, engine string
	noSymmetry, noPOR                                         bool
	copies, history                                           string
}

// exploreOnly are the flags that mean something with -explore only.
var exploreOnly = []string{"depth", "events", "groups", "group-workers", "nodes", "steps", "engine", "no-symmetry", "no-por",
	"projection", "copies", "history"}

// parseExplore validates the -explore flags into o.exploreOp.
func (o *options) parseExplore(given map[string]bool, f exploreFlags) error {
	if o.explore && o.consumer != "" {
		return nil // a model check of a team's consumer: parseConsumerExplore
	}
	if !o.explore {
		for _, name := range exploreOnly {
			if given[name] {
				return usagef("-%s: needs -explore", name)
			}
		}
		return nil
	}
	for _, name := range []string{"duration", "checks", "seed", "broker", "without", "runs", "batch"} {
		if given[name] {
			return usagef("-%s: means nothing with fuzzrun explore, which enumerates every schedule", name)
		}
	}
	if o.projection {
		return o.parseProjection(given, f.copies, f.history)
	}
	for _, name := range projectionOnly {
		if given[name] {
			return usagef("-%s: needs -projection", name)
		}
	}
	if !given["depth"] {
		return usagef("-depth: fuzzrun explore needs a depth (e.g. -depth 8), or -projection")
	}
	depth, err := strconv.Atoi(f.depth)
	if err != nil || depth < 1 {
		return usagef("-depth: %q is not a depth of at least 1", f.depth)
	}
	count := func(name, v string, least int) (int, error) {
		n, err := strconv.Atoi(v)
		if err != nil || n < least {
			return 0, usagef("-%s: %q is not a whole number of at least %d", name, v, least)
		}
		return n, nil
	}
	var w explore.World
	if n, err := strconv.Atoi(f.events); err == nil {
		if n < 1 {
			return usagef("-events: %d events; need at least one", n)
		}
		for range n {
			w.Events = append(w.Events, "ok")
		}
	} else {
		for _, e := range strings.Split(f.events, ",") {
			e = strings.TrimSpace(e)
			if _, _, err := explore.ParseFate(e); err != nil {
				return usagef("-events: %v", err)
			}
			w.Events = append(w.Events, e)
		}
	}
	if w.Groups, err = count("groups", f.groups, 1); err != nil {
		return err
	}
	if w.WorkersPerGroup, err = strconv.Atoi(f.groupWorkers); err != nil || w.WorkersPerGroup < 1 {
		return usagef("-group-workers: %q: the world has no workers; need at least 1 per group", f.groupWorkers)
	}
	if w.Nodes, err = count("nodes", f.nodes, 1); err != nil {
		return err
	}
	menu := explore.ParseMenu(f.steps)
	base, err := w.Scenario()
	if err != nil {
		return usagef("-events: %v", err)
	}
	if _, err := explore.Steps(base, menu); err != nil {
		return usagef("-steps: %v", err)
	}
	if o.target.Consumption == nil {
		return usagef("-target: %s has no consumption parts to explore", o.target.Name)
	}
	switch f.engine {
	case "", explore.EngineRunner:
	case explore.EngineCompact:
		if !system.IsReference(o.target.Consumption) {
			return usagef("-engine compact: searches the reference only, not %s (use -engine runner)", o.target.Name)
		}
	default:
		return usagef("-engine: %q is not compact or runner", f.engine)
	}
	o.exploreOp = explore.Options{World: w, Menu: menu, Depth: depth, Properties: o.props, Parallel: o.workers,
		NoSymmetry: f.noSymmetry, NoPOR: f.noPOR, Coverage: true, Engine: f.engine}
	return nil
}

// exploreReport is the -json form of an exploration.
type exploreReport struct {
	Target         string              `json:"target"`
	World          explore.World       `json:"world"`
	Menu           []string            `json:"menu"`
	DepthAsked     int                 `json:"depthAsked"`
	Result         *explore.Result     `json:"result"`
	StatesPerSec   float64             `json:"statesPerSecond"`
	Verified       bool                `json:"verified"`
	CorpusFile     string              `json:"corpusFile,omitempty"`
	Counterexample *json.RawMessage    `json:"counterexampleScenario,omitempty"`
	Verdict        *properties.Verdict `json:"verdict,omitempty"`
	HTML           string              `json:"html,omitempty"`
}

// runExplore is fuzzrun -explore: the model checker over the world the
// flags describe.
func runExplore(ctx context.Context, o *options, stdout, stderr io.Writer) int {
	op := o.exploreOp
	if op.Engine == explore.EngineRunner || !system.IsReference(o.target.Consumption) {
		// The runner engine keeps little alive (fingerprints and a
		// frontier of links) and makes much garbage: collecting less often
		// saves a third of its CPU. The compact engine keeps its frontier's
		// states alive, which a lazier collector would let grow fivefold.
		defer debug.SetGCPercent(debug.SetGCPercent(400))
	} else if limit := memoryLimit(); limit > 0 {
		// A deep search of a large world fills the memory with its
		// frontier: near three quarters of it the collector works harder
		// rather than let the heap grow into swap.
		defer debug.SetMemoryLimit(debug.SetMemoryLimit(limit))
	}
	if o.exploreOp.Properties != nil {
		// -property narrows the judges to the consumption properties named.
		var ps []properties.Property
		for _, p := range op.Properties {
			if p.Kind == scenario.KindConsumption {
				ps = append(ps, p)
			}
		}
		if len(ps) == 0 {
			fmt.Fprintf(stderr, "fuzzrun: -property: no consumption property selected; -explore judges consumption\n")
			return exitUsage
		}
		op.Properties = ps
	}
	prog := newProgress(stderr, o.every)
	op.Progress = func(p explore.Progress) {
		rate := 0.0
		if s := p.Elapsed.Seconds(); s > 0 {
			rate = float64(p.States) / s
		}
		prog.update(time.Now(), fmt.Sprintf("explore: depth %d, %d/%d of the frontier, %d states, %d transitions, %.0f states/s, %s",
			p.Depth, p.Done, p.Frontier, p.States, p.Transitions, rate, p.Elapsed.Round(time.Second)))
	}
	res, err := explore.Explore(ctx, o.target, op)
	prog.clear()
	if err != nil {
		fmt.Fprintf(stderr, "fuzzrun: %v\n", err)
		if errors.Is(err, explore.ErrBounds) {
			return exitUsage
		}
		return exitInternal
	}
	rep := exploreReport{Target: o.target.Name, World: op.World, Menu: op.Menu, DepthAsked: op.Depth, Result: res,
		StatesPerSec: res.StatesPerSecond(), Verified: res.Counterexample == nil && !res.Interrupted}
	var file string
	var created bool
	if cx := res.Counterexample; cx != nil && cx.Outcome != nil && !cx.Verdict.Pass {
		f, made, err := saveExploreCase(o, cx.Verdict, cx.Outcome, cx.Scenario)
		if err != nil {
			fmt.Fprintf(stderr, "fuzzrun: save the counterexample: %v\n", err)
			return exitInternal
		}
		file, rep.CorpusFile, created = f, f, made
	}
	if o.html != "" {
		if err := report.WriteFile(o.html, exploreHTML(o, op, res, file, created)); err != nil {
			fmt.Fprintf(stderr, "fuzzrun: %v\n", err)
			return exitInternal
		}
		rep.HTML = o.html
	}
	if o.json {
		if cx := res.Counterexample; cx != nil {
			if js, err := scenario.Marshal(cx.Scenario); err == nil {
				raw := json.RawMessage(js)
				rep.Counterexample = &raw
			}
			rep.Verdict = &cx.Verdict
		}
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		_ = enc.Encode(rep)
	} else {
		printExplore(stdout, o, op, res, file)
		if o.html != "" {
			fmt.Fprintf(stdout, "\nreport: %s\n", o.html)
		}
	}
	if res.Counterexample != nil {
		return exitViolation
	}
	return exitOK
}

func printExplore(w io.Writer, o *options, op explore.Options, res *explore.Result, file string) {
	fmt.Fprintf(w, "explore %s: %s, steps %s\n", o.target.Name, describeWorld(op.World), strings.Join(op.Menu, ","))
	fmt.Fprintf(w, "depth  new states  transitions\n")
	for _, l := range res.Levels {
		fmt.Fprintf(w, "%5d  %10d  %11d\n", l.Depth, l.States, l.Transitions)
	}
	fmt.Fprintf(w, "distinct states %d, transitions %d (%d skipped by partial order), %.0f states/s, %.0f bytes/state, %s, engine %s\n",
		res.States, res.Transitions, res.Skipped, res.StatesPerSecond(), res.BytesPerState, res.Elapsed.Round(time.Millisecond), res.Engine)
	if res.FrontierBytes > 0 {
		fmt.Fprintf(w, "largest frontier: %d states packed in %.1f MB (%.0f bytes/state)\n",
			res.FrontierStates, float64(res.FrontierBytes)/(1<<20), float64(res.FrontierBytes)/float64(max(res.FrontierStates, 1)))
	}
	printCoverage(w, res.Coverage.Rows(), "(a run is a distinct state: its schedule, then its drain and replay; a situation never reached\n"+
		"is one this world and step menu cannot reach within the depth, and does not fail an exploration)", true)
	fmt.Fprintln(w)
	if cx := res.Counterexample; cx != nil {
		fmt.Fprintf(w, "%s:\n", exploreVerdict(res))
		fmt.Fprint(w, properties.Report(cx.Verdict, cx.Outcome, exploreReportOptions(o, file)))
		return
	}
	fmt.Fprintln(w, exploreVerdict(res))
}

// exploreVerdict is the verdict line of an exploration.
func exploreVerdict(res *explore.Result) string {
	switch {
	case res.Counterexample != nil:
		return fmt.Sprintf("violation at depth %d (a shortest schedule)", res.Counterexample.Depth)
	case res.Interrupted:
		return fmt.Sprintf("interrupted: every schedule up to depth %d explored, %d distinct states, no violation", res.Depth, res.States)
	}
	return fmt.Sprintf("verified: every schedule up to depth %d, %d distinct states, no violation", res.Depth, res.States)
}

// exploreReportOptions are the options of a counterexample's report: where
// it was saved (file, "" for nowhere) and the command that replays it.
func exploreReportOptions(o *options, file string) properties.ReportOptions {
	ro := properties.ReportOptions{Scenario: o.verbose, CorpusFile: file}
	if file != "" {
		ro.Replay = replayCommand(o, file)
	}
	return ro
}

func replayCommand(o *options, file string) string {
	return fmt.Sprintf("go run ./cmd/fuzzrun replay %s -target %s", file, o.target.Name)
}

// saveExploreCase saves a counterexample of an exploration in -corpus and
// returns its file ("" when -corpus is ""). A scenario the corpus already
// holds is not written again; its file is returned.
func saveExploreCase(o *options, v properties.Verdict, out *runner.Outcome, s *scenario.Scenario) (string, bool, error) {
	if o.corpusDir == "" {
		return "", false, nil
	}
	law := ""
	if len(v.Breaches) > 0 {
		law = v.Breaches[0].Law
	}
	c := &corpus.Case{Property: v.Property, Law: law, Target: o.target.Name, Summary: v.Summary, Trace: out.Trace.Lines(), Scenario: s}
	if caught, err := corpus.Catches(s); err == nil {
		c.CaughtBy = caught
	}
	return corpus.Write(o.corpusDir, c)
}

// exploreHTML is the HTML report of a consumption exploration.
func exploreHTML(o *options, op explore.Options, res *explore.Result, file string, created bool) *report.Run {
	e := &report.Exploration{World: describeWorld(op.World), Menu: op.Menu, Engine: res.Engine, DepthAsked: op.Depth,
		States: res.States, Transitions: res.Transitions, Skipped: res.Skipped,
		StatesPerSecond: res.StatesPerSecond(), BytesPerState: res.BytesPerState,
		Verdict: exploreVerdict(res), Violated: res.Counterexample != nil}
	for _, l := range res.Levels {
		e.Levels = append(e.Levels, report.ExploreLevel{Depth: l.Depth, States: l.States, Transitions: l.Transitions})
	}
	r := &report.Run{Title: "fuzzrun explore against " + o.target.Name, Mode: "explore", Command: commandLine(o.args),
		Target: o.target.Name, Workers: op.Parallel, Budget: fmt.Sprintf("depth %d", op.Depth), Elapsed: res.Elapsed,
		Interrupted: res.Interrupted, Checks: res.States, Unit: "states", Coverage: res.Coverage.Rows(), Explore: e}
	if cx := res.Counterexample; cx != nil && cx.Outcome != nil {
		r.Cases = []report.Case{exploreCase(o, cx.Verdict, cx.Outcome, file, created)}
	}
	return r
}

// exploreCase is a counterexample of an exploration as a report case.
// created says this run wrote the corpus file (it is new).
func exploreCase(o *options, v properties.Verdict, out *runner.Outcome, file string, created bool) report.Case {
	c := report.Case{Title: v.Property + " against " + o.target.Name, Property: v.Property, Target: o.target.Name,
		Verdicts: []properties.Verdict{v}, CorpusFile: file, New: created, Outcome: out}
	if file != "" {
		c.Replay = replayCommand(o, file)
	}
	return c
}

// describeWorld says what a world holds, as the text report's first line.
func describeWorld(w explore.World) string {
	return fmt.Sprintf("events %s, %d group(s) x %d worker(s), %d node(s)",
		strings.Join(w.Events, ","), w.Groups, w.WorkersPerGroup, max(w.Nodes, 1))
}
