package report

import (
	"fmt"
	"strings"
	"time"

	"github.com/idemcheck/idemcheck/faults/scenario"
	"github.com/idemcheck/idemcheck/properties"
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
	for _, c := range r.Cases {
		if c.Property != "" {
			failedCases++
		}
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
	case violations > 0 || failedCases > 0:
		v.Headline, v.Bad = fmt.Sprintf("%d violation(s) found", max(violations, failedCases)), true
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
