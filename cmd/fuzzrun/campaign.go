package main

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/idemcheck/idemcheck/corpus"
	"github.com/idemcheck/idemcheck/properties"
	"github.com/idemcheck/idemcheck/properties/coverage"
	"github.com/idemcheck/idemcheck/report"
)

// campaign is the parent's state of a campaign. Only the main loop of
// runCampaign touches it.
type campaign struct {
	parent
	checks   int64
	stats    map[string]*report.PropertyRow
	coverage coverage.Counts
	// unreachable are the situations the target cannot reach, found once
	// the coverage is judged.
	unreachable map[string]string
	found       []*finding
}

// runCampaign runs workers until the budget is spent or ctx ends, saves
// each violation, and reports.
func runCampaign(ctx context.Context, o *options, stdout, stderr io.Writer) int {
	if !o.seedGiven {
		o.seed = rand.Uint64() // printed, so the campaign can be repeated
	}
	if o.checks > 0 && int64(o.workers) > o.checks {
		o.workers = int(o.checks) // a worker with no share of the budget would have no limit
	}
	c := &campaign{parent: parent{o: o, start: time.Now(), pr: newProgress(stderr, o.every)}, stats: map[string]*report.PropertyRow{}}
	playable := 0
	for _, p := range o.props {
		row := &report.PropertyRow{Name: p.Name, Invariant: p.Invariant, Kind: string(p.Kind), Doc: p.Doc, Status: "pass"}
		for _, l := range p.Laws {
			if reason, off := o.off[properties.ID(p.Name, l.Name)]; off {
				row.Off = append(row.Off, report.OffLaw{Law: l.Name, Reason: reason})
			}
		}
		switch {
		case !corpus.HasKind(o.target, p.Kind):
			row.Status = "n/a"
		case len(row.Off) == len(p.Laws):
			row.Status = "off"
		default:
			playable++
		}
		c.stats[p.Name] = row
	}
	if playable == 0 {
		return say(stderr, exitUsage, "-target: %q plays no scenario the selected properties judge (%s)", o.target.Name, strings.Join(o.patterns, ","))
	}
	c.pr.println("fuzzrun: campaign against %s, seed %d, %d worker(s), budget %s", o.target.Name, o.seed, o.workers, c.budget())
	if err := c.runPool(ctx, func(w int) int64 { return share(o.checks, o.workers, w) }, o.duration, c.handle, c.progressLine); err != nil {
		return say(stderr, exitInternal, "%v", err)
	}
	return c.finish(stdout, stderr)
}

// handle takes a worker's report: a batch played, or a violation.
func (c *campaign) handle(m *message) {
	switch m.Type {
	case msgBatch:
		c.checks += int64(m.Checks)
		if m.Coverage != nil {
			c.coverage.Merge(*m.Coverage)
		}
		for _, name := range m.Properties {
			if row := c.stats[name]; row != nil {
				row.Checks += int64(m.Checks)
			}
		}
	case msgViolation:
		f := newFinding(c.o.target, m, c.o.corpusDir)
		c.found = append(c.found, f)
		if row := c.stats[m.Property]; row != nil {
			row.Violations++
			row.Status = "violated"
			if _, law, ok := strings.Cut(m.Law, "/"); ok && !slices.Contains(row.Broken, law) {
				row.Broken = append(row.Broken, law)
			}
		}
		if f.err != "" {
			c.errors = append(c.errors, f.err)
		}
		c.pr.println("fuzzrun: %s", f.line())
	}
}

func (c *campaign) budget() string {
	var parts []string
	if c.o.duration > 0 {
		parts = append(parts, c.o.duration.String())
	}
	if c.o.checks > 0 {
		parts = append(parts, fmt.Sprintf("%d checks", c.o.checks))
	}
	return strings.Join(parts, " or ")
}

func (c *campaign) progressLine(live int) string {
	el := time.Since(c.start)
	rate := float64(c.checks) / max(el.Seconds(), 1e-3)
	budget := ""
	if c.o.duration > 0 {
		budget = " / " + c.o.duration.String()
	}
	return fmt.Sprintf("fuzzrun %5.1fs%s  %d checks  %.0f checks/s  %d violation(s)  %d/%d workers running",
		el.Seconds(), budget, c.checks, rate, len(c.found), live, c.o.workers)
}

// statusUnchecked is the status of a property no check of the campaign
// judged: not a pass.
const statusUnchecked = "unchecked"

// unchecked names the properties the campaign could judge but never
// did.
func (c *campaign) unchecked() []string {
	var out []string
	for _, r := range c.rows() {
		if r.Status == statusUnchecked {
			out = append(out, r.Name)
		}
	}
	return out
}

// verdict is the campaign's verdict when it found nothing: pass,
// interrupted, or inconclusive (no check, or a property never checked).
func (c *campaign) verdict() string {
	v, _ := verdictOf(len(c.found) > 0 || c.coverageFailure() != "", c.interrupted, c.checks)
	if v == verdictPass && len(c.unchecked()) > 0 {
		return verdictInconclusive
	}
	return v
}

// rows returns the property rows in registry order.
func (c *campaign) rows() []report.PropertyRow {
	var out []report.PropertyRow
	for _, p := range c.o.props {
		out = append(out, *c.stats[p.Name])
	}
	return out
}

// sortedFindings orders what the workers found by worker and message
// number: the same campaign always lists its findings in the same order.
func (c *campaign) sortedFindings() []*finding {
	out := slices.Clone(c.found)
	slices.SortFunc(out, func(a, b *finding) int {
		return cmp.Or(cmp.Compare(a.msg.Worker, b.msg.Worker), cmp.Compare(a.msg.Seq, b.msg.Seq))
	})
	return out
}

// finish prints the summary (or the JSON report), writes the HTML report
// and returns the exit status.
func (c *campaign) finish(stdout, stderr io.Writer) int {
	if c.overran {
		c.errors = append(c.errors, fmt.Sprintf("workers were still busy %s after the time budget and were stopped", stopGrace))
	}
	markNew(c.found)
	for _, row := range c.stats {
		if row.Status == "pass" && row.Checks == 0 {
			row.Status = statusUnchecked // no check judged it: it did not pass anything
		}
	}
	code := exitOK
	switch {
	case len(c.found) > 0 || c.coverageFailure() != "":
		code = exitViolation
	case len(c.errors) > 0:
		code = exitInternal
	case c.verdict() != verdictPass:
		code = exitInconclusive
	}
	htmlErr := c.writeHTML()
	if htmlErr != nil {
		c.errors = append(c.errors, htmlErr.Error())
		code = max(code, exitInternal)
	}
	return c.emit(stdout, stderr, code, func() any { return c.jsonReport(code) }, c.printSummary)
}

func (c *campaign) writeHTML() error {
	if c.o.html == "" {
		return nil
	}
	r := &report.Run{Title: "fuzzrun campaign against " + c.o.target.Name, Mode: "campaign", Command: commandLine(c.o.args),
		Target: c.o.target.Name, Seed: c.o.seed, Workers: c.o.workers, Budget: c.budget(), Elapsed: c.elapsed,
		Interrupted: c.interrupted, Checks: c.checks, Properties: c.rows(),
		Coverage: c.coverage.Rows(), CoverageFailure: c.coverageFailure()}
	shown := map[string]bool{}
	for _, f := range c.sortedFindings() {
		if shown[f.hash] {
			continue // the same counterexample, found again
		}
		if rc, ok := f.reportCase(); ok {
			shown[f.hash] = true
			r.Cases = append(r.Cases, rc)
		}
	}
	return report.WriteFile(c.o.html, r)
}
