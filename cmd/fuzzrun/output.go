package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/idemcheck/idemcheck/faults/scenario"
	"github.com/idemcheck/idemcheck/properties/coverage"
	"github.com/idemcheck/idemcheck/report"
)

// campaignJSON is the -json report of a campaign.
type campaignJSON struct {
	Mode            string  `json:"mode"`
	Target          string  `json:"target"`
	Seed            uint64  `json:"seed"`
	Workers         int     `json:"workers"`
	Batch           int     `json:"batch"`
	Duration        string  `json:"duration"`
	CheckBudget     int64   `json:"checkBudget,omitempty"`
	ElapsedMs       int64   `json:"elapsedMs"`
	Checks          int64   `json:"checks"`
	ChecksPerSecond float64 `json:"checksPerSecond"`
	Interrupted     bool    `json:"interrupted"`
	// Verdict is pass, violation, interrupted or inconclusive (no check
	// played, or a selected property never checked: Unchecked).
	Verdict    string               `json:"verdict"`
	Unchecked  []string             `json:"unchecked,omitempty"`
	Properties []report.PropertyRow `json:"properties"`
	Violations []violationJSON      `json:"violations"`
	// Coverage is the table of situations reached; CoverageFailure names
	// those a campaign of coverage.MinChecks checks or more never reached.
	Coverage        []coverage.Row `json:"coverage"`
	CoverageFailure string         `json:"coverageFailure,omitempty"`
	Errors          []string       `json:"errors,omitempty"`
	HTML            string         `json:"html,omitempty"`
	Exit            int            `json:"exit"`
}

// violationJSON is one counterexample in a -json report.
type violationJSON struct {
	Property   string          `json:"property"`
	Law        string          `json:"law,omitempty"`
	Target     string          `json:"target"`
	Worker     int             `json:"worker"`
	Seed       uint64          `json:"seed"`
	BatchSeed  uint64          `json:"batchSeed"`
	Checks     int             `json:"checks"`
	Summary    string          `json:"summary"`
	Details    []string        `json:"details,omitempty"`
	Size       int             `json:"size"`
	CorpusFile string          `json:"corpusFile,omitempty"`
	New        bool            `json:"new"`
	Replay     string          `json:"replay,omitempty"`
	Trace      []string        `json:"trace,omitempty"`
	Scenario   json.RawMessage `json:"scenario,omitempty"`
	Error      string          `json:"error,omitempty"`
}

func (f *finding) json() violationJSON {
	v := violationJSON{Property: f.msg.Property, Law: f.msg.Law, Target: f.target.Name, Worker: f.msg.Worker, Seed: f.msg.Seed,
		BatchSeed: f.msg.BatchSeed, Checks: f.msg.Checks, Summary: f.verdict.Summary, Details: f.verdict.Details,
		CorpusFile: f.file, New: f.created, Replay: f.replayCommand(), Scenario: f.msg.Scenario, Error: f.err}
	if f.scenario != nil {
		v.Size = f.scenario.Size()
	}
	if f.outcome != nil {
		v.Trace = f.outcome.Trace.Lines()
	}
	return v
}

func (c *campaign) jsonReport(code int) campaignJSON {
	r := campaignJSON{Mode: "campaign", Target: c.o.target.Name, Seed: c.o.seed, Workers: c.o.workers, Batch: c.o.batch,
		Duration: c.o.duration.String(), CheckBudget: c.o.checks, ElapsedMs: c.elapsed.Milliseconds(), Checks: c.checks,
		ChecksPerSecond: float64(c.checks) / max(c.elapsed.Seconds(), 1e-3), Interrupted: c.interrupted,
		Verdict: c.verdict(), Unchecked: c.unchecked(),
		Properties: c.rows(), Violations: []violationJSON{}, Errors: c.errors, HTML: c.o.html, Exit: code,
		Coverage: c.coverage.Rows(), CoverageFailure: c.coverageFailure()}
	for _, f := range c.sortedFindings() {
		r.Violations = append(r.Violations, f.json())
	}
	return r
}

// perSecond is a rate: n in d, 0 in no time.
func perSecond[N int | int64](n N, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(n) / d.Seconds()
}

// roundDuration rounds d for a person: to the millisecond, or finer below
// one.
func roundDuration(d time.Duration) time.Duration {
	if d < time.Millisecond {
		return d.Round(time.Microsecond)
	}
	return d.Round(time.Millisecond)
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// writeReport writes the HTML report run builds to -html (nothing when
// -html is "") and returns the file written, "" for none: a report that
// cannot be written is said on stderr and raises *code to exitInternal.
func writeReport(o *options, stderr io.Writer, code *int, run func() *report.Run) string {
	if o.html == "" {
		return ""
	}
	if err := report.WriteFile(o.html, run()); err != nil {
		fmt.Fprintf(stderr, "fuzzrun: %v\n", err)
		*code = max(*code, exitInternal)
		return ""
	}
	return o.html
}

// printReportFile says where the HTML report was written, if it was.
func printReportFile(w io.Writer, file string) {
	if file != "" {
		fmt.Fprintf(w, "\nreport: %s\n", file)
	}
}

// failed says on stderr that what failed with err, and is the exit
// status: a usage error when err is one of usage (bad input), else the
// harness's own failure.
func failed(stderr io.Writer, what string, err error, usage ...error) int {
	code := exitInternal
	if slices.ContainsFunc(usage, func(u error) bool { return errors.Is(err, u) }) {
		code = exitUsage
	}
	return say(stderr, code, "%s%v", what, err)
}

// say prints a line of fuzzrun's on stderr and returns the exit status
// code, for a run that ends there.
func say(stderr io.Writer, code int, format string, args ...any) int {
	fmt.Fprintf(stderr, "fuzzrun: "+format+"\n", args...)
	return code
}

// writeJSONOr writes v as JSON on w and returns code, or exitInternal when
// it cannot be written.
func writeJSONOr(w io.Writer, v any, code int) int {
	if err := writeJSON(w, v); err != nil {
		return exitInternal
	}
	return code
}

// notBuilt says that what needs a build with tag, and the command line
// (args, after fuzzrun) that runs it; it is a usage error.
func notBuilt(stderr io.Writer, what, tag string, args []string) int {
	return say(stderr, exitUsage, "%s is not in this build, which leaves out the adapters of real servers and brokers to build fast; run it as\n  go run -tags %s ./cmd/fuzzrun %s",
		what, tag, shellJoin(args))
}

// The verdicts of a run, in its -json report.
const (
	verdictPass         = "pass"
	verdictViolation    = "violation"
	verdictInterrupted  = "interrupted"
	verdictInconclusive = "inconclusive"
)

// verdictOf is the verdict of a run and its exit status: a violation;
// else interrupted by a signal, or inconclusive when it played nothing
// (neither proves anything); else a pass.
func verdictOf(violated, interrupted bool, played int64) (string, int) {
	switch {
	case violated:
		return verdictViolation, exitViolation
	case interrupted:
		return verdictInterrupted, exitInconclusive
	case played == 0:
		return verdictInconclusive, exitInconclusive
	}
	return verdictPass, exitOK
}

// shortRun is the line of a run that broke nothing but proved nothing
// either, interrupted by a signal or having played nothing (verdict; ""
// for another verdict): who names the run (" NAME", or ""), unit what it
// played, held what held in those.
func shortRun(verdict, who, unit string, played int64, elapsed time.Duration, budget, held string) string {
	switch verdict {
	case verdictInterrupted:
		return fmt.Sprintf("INTERRUPTED%s: stopped by a signal after %d %s in %s of a budget of %s; %snothing proven beyond them",
			who, played, unit, roundDuration(elapsed), budget, held)
	case verdictInconclusive:
		return fmt.Sprintf("INCONCLUSIVE%s: 0 %s played in %s (budget %s): nothing was proven; give a longer -duration or more -checks",
			who, unit, roundDuration(elapsed), budget)
	}
	return ""
}

// rawScenario is s as JSON for a report, nil when it does not marshal.
func rawScenario(s *scenario.Scenario) *json.RawMessage {
	js, err := scenario.Marshal(s)
	if err != nil {
		return nil
	}
	raw := json.RawMessage(js)
	return &raw
}

// printSummary is the human summary: the table of properties, then each
// counterexample in full.
func (c *campaign) printSummary(w io.Writer) {
	state := ""
	if c.interrupted {
		state = " (interrupted)"
	}
	fmt.Fprintf(w, "fuzzrun: campaign against %s%s: %d checks in %.1fs (%.0f checks/s), seed %d, %d worker(s)\n\n",
		c.o.target.Name, state, c.checks, c.elapsed.Seconds(), float64(c.checks)/max(c.elapsed.Seconds(), 1e-3), c.o.seed, c.o.workers)
	printProperties(w, c.rows())
	printOff(w, c.rows())
	printCoverage(w, c.coverage.Rows(), c.coverageFailure(), c.coverageJudged())
	var broken []string
	for _, r := range c.rows() {
		for _, law := range r.Broken {
			broken = append(broken, r.Name+"/"+law)
		}
	}
	if len(broken) > 0 {
		fmt.Fprintf(w, "\nlaws broken, each with its own counterexample below: %s\n", strings.Join(broken, ", "))
	}
	found := c.sortedFindings()
	switch {
	case len(found) == 0 && c.coverageFailure() != "":
		fmt.Fprintf(w, "\nno violation found, but the campaign fails: it never reached some situations (see coverage above).\n")
	case len(found) > 0:
	case c.interrupted || c.checks == 0:
		fmt.Fprintf(w, "\n%s.\n", shortRun(c.verdict(), "", "checks", c.checks, c.elapsed, c.budget(), "no violation in those, "))
	case len(c.unchecked()) > 0:
		fmt.Fprintf(w, "\nINCONCLUSIVE: no violation in %d checks, but %d of the selected properties were never checked (%s): nothing was proven of them; give a longer -duration or more -checks.\n",
			c.checks, len(c.unchecked()), strings.Join(c.unchecked(), ", "))
	default:
		fmt.Fprintf(w, "\nno violation found.\n")
	}
	shown := map[string]int{} // scenario hash -> the violation that showed it
	for i, f := range found {
		fmt.Fprintf(w, "\n=== violation %d of %d: %s against %s\n", i+1, len(found), f.lawOrProperty(), f.target.Name)
		if j, ok := shown[f.hash]; ok && f.hash != "" {
			fmt.Fprintf(w, "the same counterexample as violation %d (rapid seed %d)\n", j, f.msg.Seed)
			continue
		}
		shown[f.hash] = i + 1
		fmt.Fprint(w, f.text(c.o.verbose))
	}
	if c.o.html != "" {
		fmt.Fprintf(w, "\nreport: %s\n", c.o.html)
	}
}

// printOff lists the laws switched off, with their reasons.
func printOff(w io.Writer, rows []report.PropertyRow) {
	first := true
	for _, r := range rows {
		for _, o := range r.Off {
			if first {
				fmt.Fprintf(w, "\nlaws switched off (not judged):\n")
				first = false
			}
			fmt.Fprintf(w, "  %s/%s: %s\n", r.Name, o.Law, o.Reason)
		}
	}
}

func printProperties(w io.Writer, rows []report.PropertyRow) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "#\tproperty\tkind\tchecks\tviolations\tverdict\t")
	for _, r := range rows {
		fmt.Fprintf(tw, "%d\t%s\t%s\t%d\t%d\t%s\t\n", r.Invariant, r.Name, r.Kind, r.Checks, r.Violations, r.Status)
	}
	tw.Flush()
}
