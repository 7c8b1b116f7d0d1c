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
	parent
	jobs  []mutantJob
	kills map[string][]*message
}

// runMutants hunts every mutant o.runs times with the property it names and
// reports, per mutant, whether it was killed, the checks and seconds it took
// and the size of the shrunk counterexample; the smallest counterexample of
// each mutant is saved in the corpus.
func runMutants(ctx context.Context, o *options, stdout, stderr io.Writer) int {
	b := &benchmark{parent: parent{o: o, start: time.Now(), pr: newProgress(stderr, o.every)}, jobs: mutantJobs(o), kills: map[string][]*message{}}
	o.workers = max(1, min(o.workers, len(b.jobs)))
	b.pr.println("fuzzrun: mutation benchmark: %d hunt(s) of at most %d checks, seed %d, %d worker(s)", len(b.jobs), o.checks, o.seed, o.workers)
	line := func(int) string {
		return fmt.Sprintf("fuzzrun mutants %5.1fs  %d/%d hunts done", time.Since(b.start).Seconds(), b.done(), len(b.jobs))
	}
	if err := b.runPool(ctx, func(int) int64 { return o.checks }, 0, b.handle, line); err != nil {
		return say(stderr, exitInternal, "%v", err)
	}
	return b.finish(stdout, stderr)
}

// handle takes a worker's report of one hunt.
func (b *benchmark) handle(m *message) {
	if m.Type == msgKill {
		b.kills[m.Mutant] = append(b.kills[m.Mutant], m)
		if !m.Killed {
			b.pr.println("fuzzrun: mutant %s survived %d checks of %s (run %d)", m.Mutant, m.Checks, m.Property, m.Run)
		}
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
	var found []*finding
	for _, r := range results {
		if r.row.Killed < r.row.Runs || (r.row.Runs < b.o.runs && !b.interrupted) {
			code = exitViolation
		}
		if r.smallest == nil {
			continue
		}
		target, _ := system.Lookup(r.row.Mutant)
		r.finding = newFinding(target, r.smallest, b.o.corpusDir)
		found = append(found, r.finding)
		if r.finding.err != "" {
			b.errors = append(b.errors, r.finding.err)
		}
	}
	markNew(found)
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
	return b.emit(stdout, stderr, code, func() any { return b.jsonReport(results, notes, code) },
		func(w io.Writer) { b.printTable(w, results, notes) })
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
