package main

import (
	"fmt"
	"strings"

	"github.com/idemcheck/idemcheck/corpus"
	"github.com/idemcheck/idemcheck/faults/runner"
	"github.com/idemcheck/idemcheck/faults/scenario"
	"github.com/idemcheck/idemcheck/impl/system"
	"github.com/idemcheck/idemcheck/properties"
	"github.com/idemcheck/idemcheck/report"
)

// finding is a counterexample as the parent handled it: replayed here,
// judged, and saved in the corpus.
type finding struct {
	msg      *message
	target   system.Target
	scenario *scenario.Scenario
	outcome  *runner.Outcome
	verdicts []properties.Verdict
	verdict  properties.Verdict // the failed one the worker reported
	hash     string             // of the scenario (corpus.Hash)
	file     string
	created  bool
	err      string
}

// newFinding turns a worker's report of a shrunk counterexample into a
// finding. The parent plays the scenario again — a run is deterministic, so
// it must fail the same way; if it does not, that is a harness bug and is
// reported as one — and saves it in corpusDir ("" for nowhere) with
// everything the corpus records.
func newFinding(target system.Target, m *message, corpusDir string) *finding {
	f := &finding{msg: m, target: target, verdict: properties.Verdict{Property: m.Property, Summary: m.Summary}}
	if m.Scenario == nil {
		f.err = fmt.Sprintf("a check of %s against %s panicked or could not run (rapid seed %d): %s", m.Kind, target.Name, m.Seed, firstLine(m.Message))
		return f
	}
	s, err := scenario.Unmarshal(m.Scenario)
	if err != nil {
		f.err = fmt.Sprintf("worker %d sent a scenario that does not load: %v", m.Worker, err)
		return f
	}
	f.scenario = s
	f.hash, _ = corpus.Hash(s)
	out, verdicts, err := corpus.Judge(s, target, nil)
	if err != nil {
		f.err = fmt.Sprintf("replay of the counterexample of %s against %s: %v", m.Property, target.Name, err)
		return f
	}
	f.outcome, f.verdicts = out, verdicts
	reproduced := false
	for _, v := range verdicts {
		for _, b := range v.Breaches {
			if properties.ID(v.Property, b.Law) == m.Law || (m.Law == "" && v.Property == m.Property) {
				f.verdict, reproduced = v, true
			}
		}
	}
	if !reproduced && m.Property != "runner" {
		f.err = fmt.Sprintf("the counterexample of %s against %s did not fail again when replayed: the run is not deterministic", m.Property, target.Name)
	}
	if corpusDir == "" || !reproduced {
		return f
	}
	caught, err := corpus.Catches(s)
	if err != nil {
		f.err = err.Error()
		return f
	}
	_, law, _ := strings.Cut(m.Law, "/")
	c := &corpus.Case{Property: m.Property, Law: law, Target: target.Name, Summary: f.verdict.Summary, CaughtBy: caught,
		Seed: m.Seed, Trace: out.Trace.Lines(), Scenario: s}
	if f.file, f.created, err = corpus.Write(corpusDir, c); err != nil {
		f.err = fmt.Sprintf("save the counterexample of %s: %v", m.Property, err)
	}
	return f
}

// replayCommand is the one command that replays the finding.
func (f *finding) replayCommand() string {
	if f.file == "" {
		return ""
	}
	return fmt.Sprintf("go run ./cmd/fuzzrun replay %s -target %s", shellQuote(f.file), shellQuote(f.target.Name))
}

// line is the one-line notice printed when the finding arrives.
func (f *finding) line() string {
	if f.scenario == nil {
		return "check failed without a counterexample: " + f.err
	}
	s := fmt.Sprintf("violation of %s against %s (worker %d, rapid seed %d, shrunk to size %d)",
		f.lawOrProperty(), f.target.Name, f.msg.Worker, f.msg.Seed, f.scenario.Size())
	switch {
	case f.file != "" && f.created:
		s += " -> " + f.file + " (new)"
	case f.file != "":
		s += " -> " + f.file + " (already known)"
	}
	return s
}

// lawOrProperty names what was broken: the law, or the property when a
// worker reported none (a check that could not run).
func (f *finding) lawOrProperty() string {
	if f.msg.Law != "" {
		return f.msg.Law
	}
	return f.msg.Property
}

// text is the account for the summary: the verdict, the numbered trace, the
// corpus file and how to replay it; the scenario as JSON (it is in the
// corpus file) only when verbose.
func (f *finding) text(verbose bool) string {
	if f.outcome == nil {
		return "FAIL " + f.msg.Property + ": " + f.err + "\n"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "rapid seed %d; shrunk to size %d, reduced to %d\n", f.msg.Seed, max(f.msg.ShrunkSize, f.scenario.Size()), f.scenario.Size())
	file := ""
	if f.file != "" {
		state := "new"
		if !f.created {
			state = "already known"
		}
		file = fmt.Sprintf("%s (%s)", f.file, state)
	}
	b.WriteString(properties.Report(f.verdict, f.outcome, properties.ReportOptions{Scenario: verbose, CorpusFile: file, Replay: f.replayCommand()}))
	return b.String()
}

// reportCase is the finding for the HTML report.
func (f *finding) reportCase() (report.Case, bool) {
	if f.outcome == nil {
		return report.Case{}, false
	}
	return report.Case{Title: f.msg.Property + " against " + f.target.Name, Property: f.msg.Property, Target: f.target.Name,
		Seed: f.msg.Seed, Verdicts: f.verdicts, CorpusFile: f.file, New: f.created, Replay: f.replayCommand(), Outcome: f.outcome}, true
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return s
}

// commandLine is how this run was started, for the report.
func commandLine(given []string) string {
	args := []string{"fuzzrun"}
	for _, a := range given {
		if a == "" || strings.ContainsAny(a, " \t\"'") {
			a = fmt.Sprintf("%q", a)
		}
		args = append(args, a)
	}
	return strings.Join(args, " ")
}
