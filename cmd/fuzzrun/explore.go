package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
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

// unboundedDepth is the depth of an exploration without -depth: it deepens
// until no new state is reached, or a budget runs out.
const unboundedDepth = math.MaxInt32

// exploreFlags are the raw values of the flags of fuzzrun explore (and of
// fuzzrun consumer -explore's -events, -group-workers and -no-por).
type exploreFlags struct {
	depth, events, groups, groupWorkers, nodes, steps, engine string
	noSymmetry, noPOR                                         bool
	copies, history                                           string
}

// parseExplore validates the flags of fuzzrun explore into o.exploreOp.
func (o *options) parseExplore(given map[string]bool, f exploreFlags) error {
	if o.projection {
		return o.parseProjection(given, f.copies, f.history)
	}
	for _, name := range projectionOnly {
		if given[name] {
			return usagef("-%s: needs -projection", name)
		}
	}
	depth := unboundedDepth
	if o.depthGiven = given["depth"]; o.depthGiven {
		d, err := strconv.Atoi(f.depth)
		if err != nil || d < 1 || d >= unboundedDepth {
			return usagef("-depth: %q is not a depth from 1 to %d (leave -depth out to deepen until the time or memory budget runs out)", f.depth, unboundedDepth-1)
		}
		depth = d
	}
	var err error
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
	Target string        `json:"target"`
	World  explore.World `json:"world"`
	Menu   []string      `json:"menu"`
	// DepthAsked is -depth; 0 when none was given (the search deepens
	// until the state space is exhausted or a budget runs out).
	DepthAsked   int             `json:"depthAsked,omitempty"`
	Result       *explore.Result `json:"result"`
	StatesPerSec float64         `json:"statesPerSecond"`
	// Verified: the bound asked for (-depth, or the whole reachable state
	// space without it) was explored and nothing broke.
	Verified bool `json:"verified"`
	// Stopped says what ended the search short: time, memory or signal
	// ("" when nothing did).
	Stopped string `json:"stopped,omitempty"`
	// Conclusion is the verdict line: which bound the search finished.
	Conclusion     string              `json:"conclusion"`
	CorpusFile     string              `json:"corpusFile,omitempty"`
	Counterexample *json.RawMessage    `json:"counterexampleScenario,omitempty"`
	Verdict        *properties.Verdict `json:"verdict,omitempty"`
	HTML           string              `json:"html,omitempty"`
	Exit           int                 `json:"exit"`
}

// exploration is a finished search and how it ended, for its reports.
type exploration struct {
	op     explore.Options
	res    *explore.Result
	budget *searchBudget
	// stopped: why the search ended short ("" when it did not).
	stopped string
	// depthGiven: op.Depth is -depth, not unboundedDepth.
	depthGiven bool
}

// exhausted reports whether the search met a depth with no new state:
// every deeper schedule only revisits.
func (x *exploration) exhausted() bool {
	return x.stopped == "" && x.res.Counterexample == nil && x.res.Depth == x.op.Depth && len(x.res.Levels) > 0 &&
		x.res.Levels[len(x.res.Levels)-1].States == 0
}

// verified reports whether the bound asked for was explored in full with
// no violation.
func (x *exploration) verified() bool {
	return x.res.Counterexample == nil && x.stopped == "" && (x.depthGiven || x.exhausted())
}

// exit is the exit status of the search: 1 for a violation; 4 when it was
// interrupted, stopped by a budget short of the -depth it was given, or
// explored no depth at all; 0 otherwise.
func (x *exploration) exit() int {
	switch {
	case x.res.Counterexample != nil:
		return exitViolation
	case x.stopped == stoppedBySignal:
		return exitInconclusive
	case x.stopped != "" && (x.depthGiven || x.res.Depth < 1):
		return exitInconclusive
	}
	return exitOK
}

// verdict is the verdict line of an exploration: which bound it finished.
func (x *exploration) verdict() string {
	res := x.res
	if cx := res.Counterexample; cx != nil {
		return fmt.Sprintf("violation at depth %d (a shortest schedule)", cx.Depth)
	}
	if x.stopped == "" {
		if x.depthGiven {
			return fmt.Sprintf("verified: every schedule up to depth %d, %d distinct states, no violation", res.Depth, res.States)
		}
		last := len(res.Levels) - 1
		return fmt.Sprintf("verified: every reachable state, %d distinct states, no violation (no schedule of %d steps reaches a new state, so no longer one does)",
			res.States, last)
	}
	by := x.budget.by(x.stopped)
	explored := fmt.Sprintf("every schedule up to depth %d explored, %d distinct states, no violation", res.Depth, res.States)
	if res.Depth < 1 {
		explored = fmt.Sprintf("no depth fully explored (%d distinct states reached), no violation found", res.States)
	}
	at := res.Depth + 1
	switch {
	case x.stopped == stoppedBySignal:
		return fmt.Sprintf("INTERRUPTED at depth %d %s: %s; nothing proven beyond depth %d", at, by, explored, res.Depth)
	case x.depthGiven:
		return fmt.Sprintf("NOT VERIFIED to depth %d: stopped %s at depth %d; %s", x.op.Depth, by, at, explored)
	case res.Depth < 1:
		return fmt.Sprintf("INCONCLUSIVE: stopped %s at depth %d; %s", by, at, explored)
	}
	return fmt.Sprintf("stopped %s at depth %d: %s", by, at, explored)
}

// frontierShare: the compact engine's frontier holds at most 1/frontierShare
// of -max-memory in memory (explore.Options.FrontierMemory).
const frontierShare = 4

// runExplore is fuzzrun explore: the model checker over the world the
// flags describe, within -depth (if given), -duration and -max-memory.
func runExplore(ctx context.Context, o *options, stdout, stderr io.Writer) int {
	op := o.exploreOp
	if op.Engine == explore.EngineRunner || !system.IsReference(o.target.Consumption) {
		// The runner engine keeps little alive (fingerprints and a
		// frontier of links) and makes much garbage: collecting less often
		// saves a third of its CPU. The compact engine keeps its frontier's
		// states alive, which a lazier collector would let grow fivefold;
		// near the memory budget (searchContext) the collector works
		// harder rather than let the heap grow into swap.
		defer debug.SetGCPercent(debug.SetGCPercent(400))
	}
	if o.exploreOp.Properties != nil {
		// -property narrows the judges to the consumption properties named.
		ps := ofKind(op.Properties, scenario.KindConsumption)
		if len(ps) == 0 {
			return say(stderr, exitUsage, "-property: no consumption property selected; fuzzrun explore judges consumption (-projection: projections)")
		}
		op.Properties = ps
	}
	if o.maxMemory > 0 {
		// The frontier being built is the one part of the search that is
		// read back only in order: past a quarter of the budget it goes to
		// disk, and the visited set keeps the rest of the budget.
		op.FrontierMemory = o.maxMemory / frontierShare
	}
	sctx, budget, release := searchContext(ctx, o.duration, o.maxMemory)
	prog := newProgress(stderr, o.every)
	depth := "deepening until the budget runs out"
	if o.depthGiven {
		depth = fmt.Sprintf("up to depth %d", op.Depth)
	}
	prog.println("fuzzrun: explore %s: %s, %s; budget %s", o.target.Name, describeWorld(op.World), depth, budget)
	op.Progress = func(p explore.Progress) {
		prog.update(time.Now(), fmt.Sprintf("explore: depth %d, %d/%d of the frontier, %d states, %d transitions, %.0f states/s, %s",
			p.Depth, p.Done, p.Frontier, p.States, p.Transitions, perSecond(p.States, p.Elapsed), p.Elapsed.Round(time.Second)))
	}
	res, err := explore.Explore(sctx, o.target, op)
	x := &exploration{op: op, res: res, budget: budget, depthGiven: o.depthGiven}
	if res != nil && res.Interrupted {
		x.stopped = budget.stopped(sctx)
		if x.stopped == "" {
			x.stopped = stoppedBySignal
		}
	}
	release()
	prog.clear()
	if err != nil {
		return failed(stderr, "", err, explore.ErrBounds)
	}
	rep := exploreReport{Target: o.target.Name, World: op.World, Menu: op.Menu, Result: res,
		StatesPerSec: res.StatesPerSecond(), Verified: x.verified(), Stopped: x.stopped, Conclusion: x.verdict(), Exit: x.exit()}
	if o.depthGiven {
		rep.DepthAsked = op.Depth
	}
	var file string
	var created bool
	if cx := res.Counterexample; cx != nil && cx.Outcome != nil && !cx.Verdict.Pass {
		f, made, err := saveExploreCase(o, cx.Verdict, cx.Outcome, cx.Scenario)
		if err != nil {
			// The counterexample is shown all the same, then the error.
			rep.Exit = failed(stderr, "save the counterexample: ", err)
		}
		file, rep.CorpusFile, created = f, f, made
	}
	written := exitOK // a report not written is the harness's failure, even after an inconclusive search
	if rep.HTML = writeReport(o, stderr, &written, func() *report.Run { return exploreHTML(o, x, file, created) }); written != exitOK {
		rep.Exit = exitInternal
	}
	if o.json {
		if cx := res.Counterexample; cx != nil {
			rep.Counterexample, rep.Verdict = rawScenario(cx.Scenario), &cx.Verdict
		}
		_ = writeJSON(stdout, rep)
	} else {
		printExplore(stdout, o, x, file)
		printReportFile(stdout, rep.HTML)
	}
	return rep.Exit
}

func printExplore(w io.Writer, o *options, x *exploration, file string) {
	op, res := x.op, x.res
	fmt.Fprintf(w, "explore %s: %s, steps %s\n", o.target.Name, describeWorld(op.World), strings.Join(op.Menu, ","))
	fmt.Fprintf(w, "depth  new states  transitions\n")
	for _, l := range res.Levels {
		fmt.Fprintf(w, "%5d  %10d  %11d\n", l.Depth, l.States, l.Transitions)
	}
	fmt.Fprintf(w, "distinct states %d, transitions %d (%d skipped by partial order), %.0f states/s, %.0f bytes/state, %s, engine %s\n",
		res.States, res.Transitions, res.Skipped, res.StatesPerSecond(), res.BytesPerState, res.Elapsed.Round(time.Millisecond), res.Engine)
	if res.FrontierBytes > 0 {
		spilled := ""
		if res.FrontierSpilled > 0 {
			spilled = fmt.Sprintf(", %.1f MB of it written to disk past the frontier's share of -max-memory", float64(res.FrontierSpilled)/(1<<20))
		}
		fmt.Fprintf(w, "largest frontier: %d states packed in %.1f MB (%.0f bytes/state)%s\n",
			res.FrontierStates, float64(res.FrontierBytes)/(1<<20), float64(res.FrontierBytes)/float64(max(res.FrontierStates, 1)), spilled)
	}
	printCoverage(w, res.Coverage.Rows(), "(a run is a distinct state: its schedule, then its drain and replay; a situation never reached\n"+
		"is one this world and step menu cannot reach within the depth, and does not fail an exploration)", true)
	fmt.Fprintln(w)
	if cx := res.Counterexample; cx != nil {
		fmt.Fprintf(w, "%s:\n", x.verdict())
		fmt.Fprint(w, properties.Report(cx.Verdict, cx.Outcome, exploreReportOptions(o, file)))
		return
	}
	fmt.Fprintln(w, x.verdict())
}

// exploreReportOptions are the options of a counterexample's report: where
// it was saved (file, "" for nowhere) and the command that replays it.
func exploreReportOptions(o *options, file string) properties.ReportOptions {
	return properties.ReportOptions{Scenario: o.verbose, CorpusFile: file, Replay: replayCommand(o, file)}
}

// replayCommand is the command that replays the corpus file of an
// exploration's counterexample ("" for none).
func replayCommand(o *options, file string) string {
	if file == "" {
		return ""
	}
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
func exploreHTML(o *options, x *exploration, file string, created bool) *report.Run {
	op, res := x.op, x.res
	e := &report.Exploration{World: describeWorld(op.World), Menu: op.Menu, Engine: res.Engine,
		States: res.States, Transitions: res.Transitions, Skipped: res.Skipped,
		StatesPerSecond: res.StatesPerSecond(), BytesPerState: res.BytesPerState,
		Verdict: x.verdict(), Violated: res.Counterexample != nil}
	budget := x.budget.String()
	if x.depthGiven {
		e.DepthAsked = op.Depth
		budget = fmt.Sprintf("depth %d, %s", op.Depth, budget)
	}
	for _, l := range res.Levels {
		e.Levels = append(e.Levels, report.ExploreLevel{Depth: l.Depth, States: l.States, Transitions: l.Transitions})
	}
	r := &report.Run{Title: "fuzzrun explore against " + o.target.Name, Mode: "explore", Command: commandLine(o.args),
		Target: o.target.Name, Workers: op.Parallel, Budget: budget, Elapsed: res.Elapsed,
		Interrupted: x.stopped == stoppedBySignal, Checks: res.States, Unit: "states", Coverage: res.Coverage.Rows(), Explore: e}
	if cx := res.Counterexample; cx != nil && cx.Outcome != nil {
		r.Cases = []report.Case{exploreCase(o, cx.Verdict, cx.Outcome, file, created)}
	}
	return r
}

// exploreCase is a counterexample of an exploration as a report case.
// created says this run wrote the corpus file (it is new).
func exploreCase(o *options, v properties.Verdict, out *runner.Outcome, file string, created bool) report.Case {
	return report.Case{Title: v.Property + " against " + o.target.Name, Property: v.Property, Target: o.target.Name,
		Verdicts: []properties.Verdict{v}, CorpusFile: file, New: created, Outcome: out, Replay: replayCommand(o, file)}
}

// describeWorld says what a world holds, as the text report's first line.
func describeWorld(w explore.World) string {
	return fmt.Sprintf("events %s, %d group(s) x %d worker(s), %d node(s)",
		strings.Join(w.Events, ","), w.Groups, w.WorkersPerGroup, max(w.Nodes, 1))
}
