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

// switchable are the consumption faults -without may switch off.
var switchable = []scenario.Op{
	scenario.OpDuplicate, scenario.OpCrash, scenario.OpAdvance, scenario.OpSkew, scenario.OpClockStep,
	scenario.OpCleanup, scenario.OpReplay, scenario.OpProduceFail,
}

// parseWithout resolves -without: consumption ops, comma-separated, whose
// faults the generator must not draw.
func parseWithout(spec string) ([]scenario.Op, error) {
	var out []scenario.Op
	for _, s := range strings.Split(spec, ",") {
		op := scenario.Op(strings.TrimSpace(s))
		if op == "" {
			continue
		}
		if !slices.Contains(switchable, op) {
			names := make([]string, len(switchable))
			for i, o := range switchable {
				names[i] = string(o)
			}
			return nil, usagef("-without: %q is not a fault that can be switched off; the faults are %s", op, strings.Join(names, ", "))
		}
		out = append(out, op)
	}
	return out, nil
}

// generator is what a campaign's worker draws scenarios of kind k with:
// nil (the kind's default) unless -without switched a fault off.
func generator(o *options, k scenario.Kind) *rapid.Generator[*scenario.Scenario] {
	if k == scenario.KindConsumption && len(o.without) > 0 {
		return gen.ConsumptionWithout(o.without...)
	}
	return nil
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

// joinOps is the -without value of ops.
func joinOps(ops []scenario.Op) string {
	s := make([]string, len(ops))
	for i, op := range ops {
		s[i] = string(op)
	}
	return strings.Join(s, ",")
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
