package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/idemcheck/idemcheck/examples/consumers/catalog"
	"github.com/idemcheck/idemcheck/internal/consumerharness"
	"github.com/idemcheck/idemcheck/internal/search"
	"github.com/idemcheck/idemcheck/report"
)

// fuzzrun consumer C -explore model-checks a team's consumer
// (consumerharness.Explore): every schedule within the bounds the flags give,
// or the shortest counterexample.

// consumerExploreFlags are the raw values of the flags of fuzzrun consumer -explore.
type consumerExploreFlags struct {
	preemptions, crashes, failures, duplicates, advances, replays, durations, maxSteps string
	// rebalances and partitions bound a log consumer's search.
	rebalances, partitions string
	noCache, noSymmetry    bool
	// shard and certificate: one shard of a split search, and where its
	// certificate goes (certificate.go).
	shard, certificate string
}

// consumerExploreOnly are the flags of fuzzrun consumer that mean
// something with -explore only.
var consumerExploreOnly = []string{"events", "group-workers", "preemptions", "crashes", "failures", "duplicates", "advances", "durations",
	"replays", "rebalances", "partitions", "max-steps", "no-por", "no-cache", "no-symmetry", "shard", "certificate"}

// defaultConsumerExploreFlags are the bounds' flags at
// consumerharness.DefaultBounds.
func defaultConsumerExploreFlags() consumerExploreFlags {
	d := consumerharness.DefaultBounds
	return consumerExploreFlags{preemptions: strconv.Itoa(d.Preemptions), crashes: strconv.Itoa(d.Crashes), failures: strconv.Itoa(d.Failures),
		duplicates: strconv.Itoa(d.Duplicates), advances: strconv.Itoa(d.Advances), replays: strconv.Itoa(d.Replays), rebalances: strconv.Itoa(d.Log.Rebalances)}
}

// consumerExplore defines the bounds' flags of fuzzrun consumer -explore
// (-no-cache apart, which its help lists last).
func (f *flagSet) consumerExplore() {
	x := &f.r.cex
	f.str(&x.preemptions, "preemptions")
	f.str(&x.crashes, "crashes")
	f.str(&x.failures, "failures")
	f.str(&x.duplicates, "duplicates")
	f.str(&x.advances, "advances")
	f.str(&x.durations, "durations")
	f.str(&x.replays, "replays")
	f.str(&x.rebalances, "rebalances")
	f.str(&x.partitions, "partitions")
	f.str(&x.maxSteps, "max-steps")
}

// consumerShard defines -shard and -certificate.
func (f *flagSet) consumerShard() {
	f.str(&f.r.cex.shard, "shard")
	f.str(&f.r.cex.certificate, "certificate")
}

// consumerExplore is what fuzzrun consumer -explore runs.
type consumerExplore struct {
	bounds consumerharness.Bounds
	opts   []consumerharness.Option
	// budget describes the time and schedule budgets, for the report.
	budget string
	// shard, when set, is the shard searched (-shard), certificate where
	// its certificate goes; noPOR, noCache and noSymmetry are part of
	// what was searched.
	shard                      *search.Shard
	certificate                string
	noPOR, noCache, noSymmetry bool
	// workers is the number of the search's goroutines (see oneProc).
	workers int
}

// parseConsumerExplore validates the flags of fuzzrun consumer -explore into
// o.cexplore; without both flags, it rejects the flags that need them.
func (o *options) parseConsumerExplore(given map[string]bool, ef exploreFlags, f consumerExploreFlags) error {
	if !o.explore {
		for _, name := range consumerExploreOnly {
			if given[name] {
				return usagef("-%s: bounds a consumer's model check; give -explore", name)
			}
		}
		return nil
	}
	for _, name := range []string{"seed", "batch"} {
		if given[name] {
			return usagef("-%s: means nothing with fuzzrun consumer -explore (the bounds are -events, -group-workers, -preemptions, -crashes, -failures, -duplicates, -advances, -durations, -replays)", name)
		}
	}
	b := consumerharness.DefaultBounds
	bounded := anyGiven(given, "events", "group-workers", "preemptions", "crashes", "failures", "duplicates", "advances", "replays", "durations", "rebalances", "partitions")
	e, ok := catalog.Lookup(o.consumer)
	if ok && !bounded {
		// An example whose bug needs other bounds (time moving by its
		// lease) is checked within those, unless the flags say otherwise.
		b = e.VerifyBounds()
	}
	if ok && bounded && e.Consumer.Log != nil {
		// The flags bound a log consumer's search: they start from the
		// log's default bounds.
		b = *consumerharness.DefaultBounds.Log
	}
	if bounded {
		// The flags describe one search: the default's further ones
		// (a poison event, time moving) are not made.
		b.Then = nil
	}
	var err error
	if given["events"] {
		if b.Events, err = consumerharness.ParseFates(ef.events); err != nil {
			return usagef("-events: %v", err)
		}
	}
	if given["group-workers"] {
		n, err := strconv.Atoi(ef.groupWorkers)
		if err != nil || n < 1 || n > 8 {
			return usagef("-group-workers: %q is not a number of workers from 1 to 8", ef.groupWorkers)
		}
		b.Workers = n
	}
	counts := []struct {
		name string
		raw  string
		dst  *int
	}{
		{"preemptions", f.preemptions, &b.Preemptions}, {"crashes", f.crashes, &b.Crashes}, {"failures", f.failures, &b.Failures},
		{"duplicates", f.duplicates, &b.Duplicates}, {"advances", f.advances, &b.Advances}, {"replays", f.replays, &b.Replays},
		{"rebalances", f.rebalances, &b.Rebalances},
	}
	for _, c := range counts {
		if !given[c.name] {
			continue
		}
		n, err := strconv.Atoi(c.raw)
		if err != nil || n < 0 || n > 100 {
			return usagef("-%s: %q is not a whole number from 0 to 100", c.name, c.raw)
		}
		*c.dst = n
	}
	if f.durations != "" {
		for _, d := range strings.Split(f.durations, ",") {
			v, err := time.ParseDuration(strings.TrimSpace(d))
			if err != nil || v < time.Millisecond {
				return usagef("-durations: %q is not a duration of at least 1ms (e.g. 30s,5m)", d)
			}
			b.Durations = append(b.Durations, v)
		}
	}
	if given["partitions"] {
		n, err := strconv.Atoi(f.partitions)
		if err != nil || n < 1 || n > 8 {
			return usagef("-partitions: %q is not a number of partitions from 1 to 8", f.partitions)
		}
		b.Partitions = n
	}
	if f.maxSteps != "" {
		n, err := strconv.Atoi(f.maxSteps)
		if err != nil || n < 1 {
			return usagef("-max-steps: %q is not a positive number", f.maxSteps)
		}
		b.MaxSteps = n
	}
	if err := b.Validate(); err != nil {
		return usagef("%v", err)
	}
	workers := o.workers
	if serialConsumer(o.consumer) {
		workers = 1 // its scenarios keep state on a server, per scenario in the order its workers start
	}
	cx := &consumerExplore{bounds: b, workers: workers, opts: []consumerharness.Option{consumerharness.VerifyParallel(workers)}}
	var budget []string
	d := o.duration
	if !given["duration"] {
		d = defaultConsumerExploreDuration
	}
	if d > 0 {
		cx.opts = append(cx.opts, consumerharness.VerifyTime(d))
		budget = append(budget, d.String())
	}
	if o.checks > 0 {
		cx.opts = append(cx.opts, consumerharness.VerifySchedules(o.checks))
		budget = append(budget, fmt.Sprintf("%d schedules", o.checks))
	}
	budget = append(budget, formatBytes(o.maxMemory)+" of memory")
	cx.budget = strings.Join(budget, " or ")
	if ef.noPOR {
		cx.opts = append(cx.opts, consumerharness.NoPOR())
	}
	if f.noCache {
		cx.opts = append(cx.opts, consumerharness.NoCache())
	}
	if f.noSymmetry {
		cx.opts = append(cx.opts, consumerharness.NoSymmetry())
	}
	cx.noPOR, cx.noCache, cx.noSymmetry = ef.noPOR, f.noCache, f.noSymmetry
	if err := cx.parseShard(o.consumer, given, f); err != nil {
		return err
	}
	o.cexplore = cx
	return nil
}

// runConsumerExplore is fuzzrun consumer C -explore.
func runConsumerExplore(ctx context.Context, o *options, c consumerharness.Consumer, stdout, stderr io.Writer) int {
	cx := o.cexplore
	prog := newProgress(stderr, o.every)
	// The time and schedule budgets are the search's own (cx.opts); the
	// memory budget ends its context.
	sctx, budget, release := searchContext(ctx, 0, o.maxMemory)
	defer release()
	opts := append([]consumerharness.Option{
		consumerharness.VerifyContext(sctx),
		consumerharness.OnVerifyProgress(func(p consumerharness.VerifyProgress) {
			prog.update(time.Now(), fmt.Sprintf("explore %s: <= %d preemption(s), %d schedules, %d states, %s",
				c.Name, p.Preemptions, p.Schedules, p.States, p.Elapsed.Round(time.Second)))
		}),
		consumerharness.CorpusDir(o.corpusDir),
	}, cx.opts...)
	opts = append(opts, o.dbOptions()...)
	fmt.Fprintf(stderr, "fuzzrun: model-checking consumer %s on %s: %s; budget %s\n", c.Name, o.db, cx.bounds, cx.budget)
	known := corpusFiles(o.corpusDir) // to tell a new counterexample in the report
	restore, restoreGC := oneProc(cx.workers), lazyGC()
	res, err := consumerharness.Explore(c, cx.bounds, opts...)
	restore()
	restoreGC()
	if budget.stopped(sctx) == stoppedByMemory && res.Stopped != "" {
		res.Stopped = fmt.Sprintf("the memory budget (%s) ran out", formatBytes(o.maxMemory))
	}
	prog.clear()
	if err != nil {
		return failed(stderr, "consumer "+c.Name+" -explore: ", err, consumerharness.ErrBadInput)
	}
	if res.CorpusFile != "" {
		res.Replay = consumerReplay(o, res.CorpusFile)
	}
	// Not verified and not failed: stopped by a budget or a signal, short
	// of the bounds.
	exit := exitInconclusive
	switch {
	case res.Failed:
		exit = exitViolation
	case res.Verified:
		exit = exitOK
	}
	if cx.shard != nil {
		exit = writeShardCertificate(o, c, res, stderr, exit)
	}
	html := writeReport(o, stderr, &exit, func() *report.Run { return consumerExploreHTML(o, c, res, known) })
	if o.json {
		rep := consumerExploreJSON{VerifyResult: res, Explored: res.Explored(), Unreached: res.Unreached(),
			SchedulesPerSec: res.SchedulesPerSecond(), HTML: html, Exit: exit}
		if res.Outcome != nil {
			rep.Trace = res.Outcome.Trace.Lines()
		}
		return writeJSONOr(stdout, rep, exit)
	}
	fmt.Fprint(stdout, res.Report())
	printReportFile(stdout, html)
	return exit
}

// oneProc runs a search of one worker on one processor (GOMAXPROCS 1)
// unless the user set GOMAXPROCS, and returns what puts the setting back.
// Such a search plays one schedule at a time: the scenario's goroutines
// (the scheduler, each consumer worker, the database's connections) hand
// control to one another at every scheduling point and never run side by
// side. With a second processor idle, every hand-off wakes an OS thread to
// take the goroutine made ready (a futex call each way) for no work done
// in parallel: about a third of the search's time on two cores. What the
// search finds does not depend on it (the scenario's order is the
// harness's, not the Go scheduler's).
func oneProc(workers int) func() {
	if workers != 1 || os.Getenv("GOMAXPROCS") != "" {
		return func() {}
	}
	prev := runtime.GOMAXPROCS(1)
	return func() { runtime.GOMAXPROCS(prev) }
}

// lazyGC has the collector run when the heap has grown fivefold instead
// of doubled, unless the user set GOGC, and returns what puts the setting
// back. A search keeps little on the heap (its tables of states) and makes
// much garbage with every schedule played (each a new run, its goroutines,
// its connections' calls): a heap of a few megabytes was collected every
// few schedules, a tenth of the search's CPU. The memory budget
// (-max-memory) still holds: near it the collector works harder.
func lazyGC() func() {
	if os.Getenv("GOGC") != "" {
		return func() {}
	}
	prev := debug.SetGCPercent(400)
	return func() { debug.SetGCPercent(prev) }
}

// parseShard reads -shard and -certificate.
func (cx *consumerExplore) parseShard(consumer string, given map[string]bool, f consumerExploreFlags) error {
	if !given["shard"] {
		if given["certificate"] {
			return usagef("-certificate: a certificate is a shard's; give -shard i/N")
		}
		return nil
	}
	sh, err := search.ParseShard(f.shard)
	if err != nil {
		return usagef("-shard: %v", err)
	}
	cx.shard = sh
	cx.opts = append(cx.opts, consumerharness.VerifyShard(sh.I, sh.N))
	cx.certificate = f.certificate
	if cx.certificate == "" {
		cx.certificate = defaultCertificate(consumer, sh.I, sh.N)
	}
	return nil
}

// writeShardCertificate writes the certificate of a shard's search; a
// certificate that cannot be written fails the run.
func writeShardCertificate(o *options, c consumerharness.Consumer, res consumerharness.VerifyResult, stderr io.Writer, exit int) int {
	cx := o.cexplore
	cert, err := newCertificate(c, cx, res)
	if err == nil {
		err = writeCertificate(cx.certificate, cert)
	}
	if err != nil {
		return say(stderr, exitInternal, "shard %s: write the certificate %s: %v", cx.shard, cx.certificate, err)
	}
	fmt.Fprintf(stderr, "fuzzrun: shard %s: %s; certificate written to %s (fuzzrun merge combines the shards')\n", cx.shard, cert.Verdict, cx.certificate)
	return exit
}

// consumerExploreJSON is the -json report of fuzzrun consumer -explore.
type consumerExploreJSON struct {
	consumerharness.VerifyResult
	Explored        string   `json:"explored"`
	Unreached       []string `json:"unreached,omitempty"`
	SchedulesPerSec float64  `json:"schedulesPerSec"`
	Trace           []string `json:"trace,omitempty"`
	HTML            string   `json:"html,omitempty"`
	Exit            int      `json:"exit"`
}

// consumerExploreHTML is the HTML report of a consumer's model check: the
// bounds, the verdict, the new states and choices tried per depth (of the
// last bound searched in full), the coverage table, and the
// counterexample's report.
func consumerExploreHTML(o *options, c consumerharness.Consumer, res consumerharness.VerifyResult, known map[string]bool) *report.Run {
	verdict := "verified within these bounds: no schedule breaks a law"
	switch {
	case res.Failed:
		verdict = fmt.Sprintf("counterexample: %s breaks %s (%d preemption(s), %d step(s) and the drain)", c.Name, res.Law, res.Preemptions, res.Steps)
	case !res.Verified:
		verdict = fmt.Sprintf("not verified: %s; %s", res.Stopped, res.Explored())
	}
	var transitions int64
	for _, l := range res.Levels {
		for _, d := range l.Depths {
			transitions += d.Transitions
		}
	}
	e := &report.Exploration{World: res.Bounds.String(), Menu: choiceMenu(res.Bounds), Engine: "stateless search of the consumer on " + res.Backend,
		States: res.States, Transitions: transitions, Skipped: res.SleepPruned, StatesPerSecond: perSecond(res.States, res.Elapsed),
		BytesPerState: res.BytesPerState, Schedules: res.Schedules, SchedulesPerSecond: res.SchedulesPerSecond(),
		Verdict: verdict, Violated: res.Failed}
	if l := deepestLevel(res); l != nil {
		for _, d := range l.Depths {
			e.Levels = append(e.Levels, report.ExploreLevel{Depth: d.Depth, States: int(d.States), Transitions: d.Transitions})
		}
	}
	var notes []string
	notes = append(notes, fmt.Sprintf("%s: %d schedules played from the start, %d judged, %d distinct states; pruned %d choices by partial order, %d states met again by caching, %d choices over the preemption bound; %.0f schedules/s",
		res.Explored(), res.Schedules, res.Judged, res.States, res.SleepPruned, res.CachePruned, res.BoundPruned, res.SchedulesPerSecond()))
	for _, l := range res.Levels {
		what := fmt.Sprintf("every schedule with at most %d preemption(s)", l.Preemptions)
		if l.PrefixSteps > 0 {
			what = fmt.Sprintf("every prefix of %d step(s) with at most %d preemption(s), completed by the drain", l.PrefixSteps, l.Preemptions)
		}
		notes = append(notes, fmt.Sprintf("%s: %d schedules, %d states, %d sleep-pruned, %d cache-pruned, complete %t, %s",
			what, l.Schedules, l.States, l.SleepPruned, l.CachePruned, l.Complete, l.Elapsed.Round(time.Millisecond)))
	}
	var cases []report.Case
	if res.Failed && res.Outcome != nil {
		found := &consumerharness.Result{Consumer: c.Name, Failed: true, Law: res.Law, Breaches: res.Breaches, Scenario: res.Scenario, Outcome: res.Outcome,
			CorpusFile: res.CorpusFile, Replay: res.Replay}
		cases = append(cases, report.Case{Title: res.Law + " against " + c.Name, Property: res.Law, Target: c.Name,
			CorpusFile: res.CorpusFile, New: res.CorpusFile != "" && !known[res.CorpusFile], Replay: res.Replay, Consumer: found})
	}
	return &report.Run{Title: "fuzzrun consumer " + c.Name + " -explore", Mode: "explore", Command: commandLine(o.args), Target: c.Name,
		Budget: o.cexplore.budget, Elapsed: res.Elapsed, Interrupted: res.Stopped == "interrupted", Checks: res.Schedules, Unit: "schedules",
		Coverage: report.ConsumerCoverage(res.Coverage, res.Schedules, res.Situations()...), Explore: e, Notes: notes, Cases: cases}
}

// deepestLevel is the last full search of a preemption bound.
func deepestLevel(res consumerharness.VerifyResult) *consumerharness.VerifyLevel {
	var out *consumerharness.VerifyLevel
	for i := range res.Levels {
		if res.Levels[i].PrefixSteps == 0 {
			out = &res.Levels[i]
		}
	}
	return out
}

// choiceMenu lists the choices the bounds allow.
func choiceMenu(b consumerharness.Bounds) []string {
	out := []string{"run/receive", fmt.Sprintf("preempt<=%d", b.Preemptions)}
	for _, c := range []struct {
		name string
		n    int
	}{{"crash", b.Crashes}, {"fail", b.Failures}, {"duplicate", b.Duplicates}, {"advance", b.Advances}, {"replay", b.Replays}} {
		if c.n > 0 {
			out = append(out, fmt.Sprintf("%s<=%d", c.name, c.n))
		}
	}
	return out
}

// anyGiven reports whether any of the named flags was given.
func anyGiven(given map[string]bool, names ...string) bool {
	for _, n := range names {
		if given[n] {
			return true
		}
	}
	return false
}
