package report

import (
	"fmt"
	"strings"
	"time"

	"github.com/idemcheck/idemcheck/faults/scenario"
	"github.com/idemcheck/idemcheck/internal/situation"
	"github.com/idemcheck/idemcheck/properties"
	"github.com/idemcheck/idemcheck/properties/coverage"
)

// view is what the template renders: the run plus everything derived.
type view struct {
	*Run
	ElapsedText string
	Headline    string
	Bad         bool
	Cases       []caseView
	// ConsumerCases and RunnerCases say which legends the cases need.
	ConsumerCases, RunnerCases bool
	// Unit is what Checks counts; Coverage the coverage table's rows.
	Unit     string
	Coverage []coverageRow
	// Unreached says some situation was never reached (the table's
	// legend explains the style).
	Unreached bool
}

// coverageRow is a coverage row with its state: "reached", "unreached"
// (no run got there: no failure, the checks just say nothing of it) or
// "failed" (a situation the campaign must reach, and its coverage check
// failed).
type coverageRow struct {
	coverage.Row
	State string
}

type caseView struct {
	Case
	Anchor   string
	Failed   []properties.Verdict
	Passed   []properties.Verdict
	Timeline *timeline
	Proj     *projView
	Trace    []string
	Scenario string
	Size     int
	Kind     string
	// DiffLabel heads the diffs; Facts adds to the case's facts line.
	DiffLabel string
	Facts     string
}

func newView(r *Run) *view {
	v := &view{Run: r, ElapsedText: r.Elapsed.Round(time.Millisecond).String()}
	violations := 0
	for _, p := range r.Properties {
		violations += p.Violations
	}
	survivors, unhunted := 0, 0
	for _, m := range r.Mutants {
		if m.Killed < m.Runs {
			survivors++
		}
		if m.Runs == 0 {
			unhunted++
		}
	}
	unchecked := 0
	for _, p := range r.Properties {
		if p.Status == "unchecked" {
			unchecked++
		}
	}
	failedCases := 0
	distinct := map[string]bool{}
	for i, c := range r.Cases {
		if c.Property != "" {
			failedCases++
			key := c.CorpusFile
			if key == "" {
				key = fmt.Sprint(i)
			}
			distinct[key] = true
		}
	}
	v.Unit = r.Unit
	if v.Unit == "" {
		v.Unit = "checks"
	}
	for _, row := range r.Coverage {
		if row.Doc == "" {
			row.Doc = situationDoc(row.Kind, row.Name)
		}
		cr := coverageRow{Row: row, State: "reached"}
		switch {
		case row.Missing && r.CoverageFailure != "" && mentions(r.CoverageFailure, row.Name):
			cr.State = "failed"
		case row.Missing || (row.Runs > 0 && row.Reached == 0):
			cr.State = "unreached"
			v.Unreached = true
		}
		v.Coverage = append(v.Coverage, cr)
	}
	if r.Consumer != nil && len(r.Consumer.Unreached) > 0 {
		v.Unreached = true
	}
	switch {
	case r.Explore != nil:
		v.Headline, v.Bad = r.Explore.Verdict, r.Explore.Violated
	case r.Consumer != nil:
		v.Headline, v.Bad = consumerHeadline(r)
	case r.Mode == "mutants" && survivors > 0:
		v.Headline, v.Bad = fmt.Sprintf("%d mutant(s) survived some hunts", survivors), true
	case r.Mode == "mutants" && unhunted > 0:
		v.Headline = fmt.Sprintf("every mutant hunted was killed; %d of %d never hunted", unhunted, len(r.Mutants))
	case r.Mode == "mutants":
		v.Headline = fmt.Sprintf("every one of %d mutants killed", len(r.Mutants))
	case len(distinct) > 0:
		v.Headline, v.Bad = fmt.Sprintf("%s found", plural(len(distinct), "distinct counterexample")), true
		if n := max(violations, failedCases); n > len(distinct) {
			v.Headline += fmt.Sprintf(" (%s in all: some were found more than once)", plural(n, "violation"))
		}
	case violations > 0:
		v.Headline, v.Bad = fmt.Sprintf("%s found", plural(violations, "violation")), true
	case r.CoverageFailure != "":
		v.Headline, v.Bad = "no violation found, but some situations were never reached", true
	case r.Checks == 0 && r.Mode == "campaign":
		v.Headline = "inconclusive: no check was played, nothing was proven"
	case unchecked > 0:
		v.Headline = fmt.Sprintf("inconclusive: no violation found, but %d of the properties were never checked", unchecked)
	default:
		v.Headline = "no violation found"
	}
	if r.Interrupted {
		v.Headline += " (interrupted: the report covers the run until Ctrl-C)"
	}
	for i, c := range r.Cases {
		v.Cases = append(v.Cases, newCaseView(i, c))
		if c.Consumer != nil {
			v.ConsumerCases = true
		} else {
			v.RunnerCases = true
		}
	}
	return v
}

func newCaseView(i int, c Case) caseView {
	cv := caseView{Case: c, Anchor: fmt.Sprintf("case-%d", i+1), DiffLabel: "model (-want) against implementation (+got)"}
	if c.Consumer != nil {
		consumerCaseView(&cv, c.Consumer)
		return cv
	}
	for _, vd := range c.Verdicts {
		if vd.Pass {
			cv.Passed = append(cv.Passed, vd)
		} else {
			cv.Failed = append(cv.Failed, vd)
		}
	}
	out := c.Outcome
	if out == nil || out.Scenario == nil {
		return cv
	}
	cv.Trace = out.Trace.Lines()
	cv.Size = out.Scenario.Size()
	cv.Kind = string(out.Scenario.Kind)
	if js, err := scenario.Marshal(out.Scenario); err == nil {
		cv.Scenario = strings.TrimRight(string(js), "\n")
	}
	switch {
	case out.Consumption != nil:
		cv.Timeline = consumptionTimeline(out, c.Verdicts)
	case out.Projection != nil:
		cv.Proj = projectionView(out, c.Verdicts)
		cv.Timeline = cv.Proj.Timeline
	}
	return cv
}

// plural is "1 violation", "3 violations".
func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// mentions reports whether text names the situation name as a word.
func mentions(text, name string) bool {
	for i := 0; ; {
		j := strings.Index(text[i:], name)
		if j < 0 {
			return false
		}
		a, b := i+j, i+j+len(name)
		if (a == 0 || !situationRune(rune(text[a-1]))) && (b == len(text) || !situationRune(rune(text[b]))) {
			return true
		}
		i = b
	}
}

func situationRune(r rune) bool { return r == '-' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' }

// situationDoc is what counts as reaching a situation, from the registry.
func situationDoc(kind scenario.Kind, name string) string {
	if s, ok := situation.Lookup(kind, name); ok {
		return s.Doc
	}
	for _, s := range situation.All() {
		if s.Name == name {
			return s.Doc
		}
	}
	return ""
}
