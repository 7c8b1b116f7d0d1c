package main

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"pgregory.net/rapid"

	"github.com/idemcheck/idemcheck/faults/gen"
	"github.com/idemcheck/idemcheck/faults/runner"
	"github.com/idemcheck/idemcheck/faults/scenario"
	"github.com/idemcheck/idemcheck/impl/system"
	"github.com/idemcheck/idemcheck/properties"
	"github.com/idemcheck/idemcheck/properties/coverage"
)

// generator is what a worker draws scenarios of kind k with: nil (the
// kind's default) unless -weights or -swarm changed the consumption mix.
func generator(o *options, k scenario.Kind) *rapid.Generator[*scenario.Scenario] {
	if k == scenario.KindConsumption && (o.weights.String() != "" || o.swarm) {
		return gen.ConsumptionWith(gen.Config{Weights: o.weights, Swarm: o.swarm})
	}
	return nil
}

// weightsHelp is the help of -weights: the kinds and their defaults.
func weightsHelp() string {
	var kinds []string
	for _, k := range gen.Kinds() {
		kinds = append(kinds, fmt.Sprintf("%s=%d", k, gen.DefaultWeight(k)))
	}
	return "-weights gives the consumption generator's kinds of step a weight each: a kind is\n" +
		"drawn in proportion to its weight, never at 0, and a shape (crash-at, takeover,\n" +
		"cleanup-reclaim: a fault pattern drawn whole) never when a kind it plays is at 0;\n" +
		"reorder weighs a delivery out of order against one in order (1); produce weighs\n" +
		"the producer's retries (each event is produced once at any weight). Kinds not\n" +
		"named keep their default; the coverage table shows what a campaign never reached.\n" +
		"The defaults:\n" + wrap(strings.Join(kinds, " "), 78, "  ")
}

// wrap breaks s into lines of at most width, each after indent.
func wrap(s string, width int, indent string) string {
	var b strings.Builder
	line := indent
	for _, w := range strings.Fields(s) {
		if len(line) > len(indent) && len(line)+1+len(w) > width {
			b.WriteString(line + "\n")
			line = indent
		}
		if len(line) > len(indent) {
			line += " "
		}
		line += w
	}
	return b.String() + line + "\n"
}

// coverageJudged reports whether the campaign's coverage is judged: its
// number of checks was fixed in advance (-checks with -duration 0), so
// that the verdict does not depend on how many checks the machine ran in
// a time, it played them all, and they are coverage.MinChecks or more.
func (c *campaign) coverageJudged() bool {
	return c.o.duration == 0 && c.o.checks > 0 && !c.interrupted && !c.overran && c.checks >= coverage.MinChecks
}

// coverageFailure is the campaign's complaint about situations never
// reached that its target can reach (properties.Unreachable), once it is
// judged.
func (c *campaign) coverageFailure() string {
	if !c.coverageJudged() {
		return ""
	}
	if c.unreachable == nil {
		c.unreachable = properties.Unreachable(c.o.target)
	}
	return c.coverage.FailureExcept(c.unreachable)
}

// printCoverage is the coverage table of the human summary; judged says
// whether situations never reached can fail the campaign.
func printCoverage(w io.Writer, rows []coverage.Row, failure string, judged bool) {
	if len(rows) == 0 {
		return
	}
	fmt.Fprintln(w, "\ncoverage: runs that reached each situation")
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "situation\tkind\treached\truns\t%\t")
	for _, r := range rows {
		mark := ""
		if r.Missing {
			mark = "  <- never reached"
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%.2f\t%s\n", r.Name, r.Kind, r.Reached, r.Runs, r.Percent(), mark)
	}
	tw.Flush()
	switch {
	case failure != "":
		fmt.Fprintf(w, "\n%s\n", failure)
	case !slices.ContainsFunc(rows, func(r coverage.Row) bool { return r.Missing }):
	case judged:
		fmt.Fprintf(w, "\n(the situations never reached are ones the target cannot reach: they do not fail the campaign)\n")
	default:
		fmt.Fprintf(w, "\n(situations never reached fail only a campaign of a fixed count, -duration 0 -checks %d or more, so that the verdict does not depend on the machine's speed)\n", coverage.MinChecks)
	}
}

// reachedBy plays s against target once more, with a coverage tracker, and
// names the situations it reached: what a replayed counterexample
// exercised. A run that fails reaches nothing.
func reachedBy(s *scenario.Scenario, target system.Target) []string {
	tr := coverage.NewTracker()
	out, err := runner.Run(s, target, tr)
	if err != nil {
		return []string{}
	}
	tr.Finish(out)
	return append([]string{}, tr.Reached().Names()...)
}

func situationsText(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}
