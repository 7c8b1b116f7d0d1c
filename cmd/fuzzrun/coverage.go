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

// coverageFailure is the campaign's complaint about situations never
// reached, once it is big enough to be judged (coverage.MinChecks).
func (c *campaign) coverageFailure() string {
	if c.checks < coverage.MinChecks {
		return ""
	}
	return c.coverage.Failure()
}

// printCoverage is the coverage table of the human summary.
func printCoverage(w io.Writer, rows []coverage.Row, failure string) {
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
	if failure != "" {
		fmt.Fprintf(w, "\n%s\n", failure)
	} else if slices.ContainsFunc(rows, func(r coverage.Row) bool { return r.Missing }) {
		fmt.Fprintf(w, "\n(fewer than %d checks: situations never reached do not fail the campaign)\n", coverage.MinChecks)
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
