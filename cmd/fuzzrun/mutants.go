package main

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/idemcheck/idemcheck/impl/system"
	"github.com/idemcheck/idemcheck/report"
)

// The goals of the mutation benchmark (the harness's headline figure).
const (
	goalMedian = 500 * time.Millisecond
	goalMax    = 10 * time.Second
)

// benchmark is the parent's state of a mutation benchmark.
type benchmark struct {
	o           *options
	jobs        []mutantJob
	kills       map[string][]*message
	errors      []string
	interrupted bool
	start       time.Time
	elapsed     time.Duration
}

// runMutants hunts every mutant o.runs times with the property it names and
// reports, per mutant, whether it was killed, the checks and seconds it took
// and the size of the shrunk counterexample; the smallest counterexample of
// each mutant is saved in the corpus.
func runMutants(ctx context.Context, o *options, stdout, stderr io.Writer) int {
	b := &benchmark{o: o, jobs: mutantJobs(o), kills: map[string][]*message{}, start: time.Now()}
	o.workers = max(1, min(o.workers, len(b.jobs)))
	pr := newProgress(stderr, o.every)
	pr.println("fuzzrun: mutation benchmark: %d hunt(s) of at most %d checks, seed %d, %d worker(s)", len(b.jobs), o.checks, o.seed, o.workers)
	pool, err := startPool(o, func(int) int64 { return o.checks }, 0)
	if err != nil {
		fmt.Fprintf(stderr, "fuzzrun: %v\n", err)
		return exitInternal
	}
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	done := ctx.Done()
	for pool.live > 0 {
		select {
		case ev := <-pool.events:
			b.handle(ev, pool, pr)
		case now := <-tick.C:
			pr.update(now, fmt.Sprintf("fuzzrun mutants %5.1fs  %d/%d hunts done", time.Since(b.start).Seconds(), b.done(), len(b.jobs)))
		case <-done:
			done = nil
			b.interrupted = true
			pr.println("fuzzrun: interrupted; stopping the workers and writing the report so far")
			pool.kill()
		}
	}
	pr.clear()
	b.elapsed = time.Since(b.start)
	return b.finish(stdout, stderr)
}

func (b *benchmark) handle(ev event, pool *pool, pr *progress) {
	if x := ev.exit; x != nil {
		pool.live--
		if x.err != nil && !b.interrupted {
			b.errors = append(b.errors, fmt.Sprintf("worker %d failed: %v\n%s", x.worker, x.err, x.stderr))
		}
		return
	}
	switch m := ev.msg; m.Type {
	case msgKill:
		b.kills[m.Mutant] = append(b.kills[m.Mutant], m)
		if !m.Killed {
			pr.println("fuzzrun: mutant %s survived %d checks of %s (run %d)", m.Mutant, m.Checks, m.Property, m.Run)
		}
	case "noise":
		pr.println("fuzzrun: worker %d: %s", m.Worker, m.Message)
	}
}

func (b *benchmark) done() int {
	n := 0
	for _, ks := range b.kills {
		n += len(ks)
	}
	return n
}

// mutantResult is one mutant's aggregate and its smallest counterexample.
type mutantResult struct {
	row      report.MutantRow
	smallest *message
	finding  *finding
}

// results aggregates the hunts per mutant, in mutant order.
func (b *benchmark) results() []*mutantResult {
	var out []*mutantResult
	seen := map[string]bool{}
	for _, j := range b.jobs {
		if seen[j.mutant.Name] {
			continue
		}
		seen[j.mutant.Name] = true
		ks := slices.Clone(b.kills[j.mutant.Name])
		slices.SortFunc(ks, func(x, y *message) int { return cmp.Compare(x.Run, y.Run) })
		r := &mutantResult{row: report.MutantRow{Mutant: j.mutant.Name, Property: j.property.Name, Bug: j.mutant.Bug, Runs: len(ks)}}
		var checks []int
		var secs, shrink []float64
		for _, k := range ks {
			if !k.Killed {
				continue
			}
			r.row.Killed++
			checks = append(checks, k.Checks)
			secs = append(secs, time.Duration(k.KillNs).Seconds())
			shrink = append(shrink, time.Duration(k.ElapsedNs-k.KillNs).Seconds())
			if r.smallest == nil || k.Size < r.smallest.Size {
				r.smallest = k
			}
		}
		if len(checks) > 0 {
			r.row.MedianChecks = median(checks)
			r.row.MedianSeconds = median(secs)
			r.row.MaxSeconds = slices.Max(secs)
			r.row.ShrinkSeconds = median(shrink)
			r.row.Size = r.smallest.Size
			r.row.ShrunkSize = max(r.smallest.ShrunkSize, r.smallest.Size)
			r.row.Law = r.smallest.Law
		}
		out = append(out, r)
	}
	return out
}

// median of a non-empty slice; the mean of the middle two for an even count.
func median[T int | float64](xs []T) T {
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// finish saves the smallest counterexamples, prints the table (or JSON),
// writes the HTML report and returns the exit status: 1 if a hunt let its
// mutant survive.
func (b *benchmark) finish(stdout, stderr io.Writer) int {
	results := b.results()
	code := exitOK
	for _, r := range results {
		if r.row.Killed < r.row.Runs || (r.row.Runs < b.o.runs && !b.interrupted) {
			code = exitViolation
		}
		if r.smallest == nil {
			continue
		}
		target, _ := system.Lookup(r.row.Mutant)
		r.finding = newFinding(target, r.smallest, b.o.corpusDir)
		if r.finding.err != "" {
			b.errors = append(b.errors, r.finding.err)
		}
	}
	// "new" means added by this run, whichever mutant's counterexample wrote it.
	added := map[string]bool{}
	for _, r := range results {
		if r.finding != nil {
			added[r.finding.file] = added[r.finding.file] || r.finding.created
		}
	}
	for _, r := range results {
		if r.finding != nil {
			r.finding.created = r.finding.file != "" && added[r.finding.file]
		}
	}
	notes := b.goals(results)
	if err := b.writeHTML(results, notes); err != nil {
		b.errors = append(b.errors, err.Error())
	}
	if len(b.errors) > 0 && code == exitOK {
		code = exitInternal
	}
	if b.interrupted && code == exitOK {
		code = exitInconclusive // no mutant survived the hunts finished, but not every hunt was
	}
	if b.o.json {
		if err := writeJSON(stdout, b.jsonReport(results, notes, code)); err != nil {
			fmt.Fprintf(stderr, "fuzzrun: %v\n", err)
			return exitInternal
		}
	} else {
		b.printTable(stdout, results, notes)
	}
	for _, e := range b.errors {
		fmt.Fprintf(stderr, "fuzzrun: error: %s\n", e)
	}
	return code
}

// goals says, in words, whether the benchmark meets its goals.
func (b *benchmark) goals(results []*mutantResult) []string {
	var survivors, unhunted, slowMedian, overMax []string
	for _, r := range results {
		switch {
		case r.row.Killed < r.row.Runs:
			survivors = append(survivors, r.row.Mutant)
		case r.row.Runs == 0 && b.interrupted:
			unhunted = append(unhunted, r.row.Mutant)
		case r.row.Runs == 0:
			survivors = append(survivors, r.row.Mutant)
		}
		if r.row.Killed > 0 && r.row.MedianSeconds > goalMedian.Seconds() {
			slowMedian = append(slowMedian, fmt.Sprintf("%s (%.2fs)", r.row.Mutant, r.row.MedianSeconds))
		}
		if r.row.MaxSeconds > goalMax.Seconds() {
			overMax = append(overMax, fmt.Sprintf("%s (%.1fs)", r.row.Mutant, r.row.MaxSeconds))
		}
	}
	verdict := func(bad []string) string {
		switch {
		case len(bad) > 0:
			return fmt.Sprintf("NOT met: %v", bad)
		case b.interrupted:
			return "met by the hunts finished"
		}
		return "met"
	}
	killed := verdict(survivors)
	if len(unhunted) > 0 && len(survivors) == 0 {
		killed = fmt.Sprintf("not judged: %v never hunted before the interruption", unhunted)
	} else if len(unhunted) > 0 {
		killed += fmt.Sprintf("; %v never hunted before the interruption", unhunted)
	}
	notes := []string{
		"goal: every mutant killed in every hunt: " + killed,
		fmt.Sprintf("goal: median time to kill at most %s for every mutant: %s", goalMedian, verdict(slowMedian)),
		fmt.Sprintf("goal: no kill slower than %s: %s", goalMax, verdict(overMax)),
		"median s / max s: wall seconds from the start of a hunt to its first failing check (the time to kill); shrink s: the median time then spent shrinking; checks: scenarios drawn up to and including the first failing one; shrunk size: steps + events (or deliveries) of the smallest counterexample after rapid's shrink; size: the same after the reduction pass",
	}
	if b.interrupted {
		notes = append(notes, fmt.Sprintf("INTERRUPTED by a signal (Ctrl-C or SIGTERM): the table covers the %d of %d hunts finished before it; nothing is proven of the others", b.done(), len(b.jobs)))
	}
	return notes
}
