// Package report renders a fuzzrun run as one self-contained HTML page: the
// checks and verdicts per property, the mutant table when there is one, and
// for every counterexample a timeline a person reads in a browser — one lane
// per worker (and lanes for the broker, the clocks and the ledger), a row
// per action, the faults and the offending actions marked — beside the
// numbered trace, the verdict with its diff, and the scenario. A run of a
// team's consumer (package consumertest, mode "consumer") gets its laws
// table and a timeline drawn from the trace's entries: a lane per worker
// with its SQL, and the broker's.
//
// The page needs nothing but a browser: CSS and a little script are inline,
// and the timeline is plain HTML, readable with scripts off.
package report

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/idemcheck/idemcheck/faults/runner"
	"github.com/idemcheck/idemcheck/internal/consumerharness"
	"github.com/idemcheck/idemcheck/properties"
	"github.com/idemcheck/idemcheck/properties/coverage"
)

// Run is what one fuzzrun run reports.
type Run struct {
	// Title heads the page.
	Title string
	// Mode is "campaign", "mutants", "replay", "explore" or "consumer".
	Mode string
	// Command is the command line that produced the run.
	Command string
	// Target is the system under test (campaign and replay).
	Target string
	// Seed is the campaign's base seed.
	Seed uint64
	// Workers is the number of worker processes.
	Workers int
	// Budget describes the time and check budget, e.g. "30s".
	Budget string
	// Elapsed is the run's wall time.
	Elapsed time.Duration
	// Interrupted is true when the run was stopped early (Ctrl-C): the
	// report covers what was done until then.
	Interrupted bool
	// Checks is the number of scenarios drawn and judged; Unit names
	// what it counts when they are not checks ("scenarios", "schedules",
	// "states"; "checks" when empty).
	Checks int64
	Unit   string
	// Properties are the per-property checks and verdicts.
	Properties []PropertyRow
	// Coverage is the table of situations reached (package coverage): how
	// many runs of each kind reached each named situation.
	Coverage []coverage.Row
	// CoverageFailure, when set, says which situations a campaign big
	// enough to be judged never reached: the run failed on it.
	CoverageFailure string
	// Mutants is the mutation benchmark's table (mode "mutants").
	Mutants []MutantRow
	// Notes are extra lines shown under the tables (e.g. the goals).
	Notes []string
	// Explore is the model checker's search (mode "explore").
	Explore *Exploration
	// Consumer is a run of a team's consumer (mode "consumer").
	Consumer *ConsumerRun
	// Cases are the counterexamples, each with its timeline.
	Cases []Case
}

// PropertyRow is one property's line in the summary.
type PropertyRow struct {
	Name      string `json:"name"`
	Invariant int    `json:"invariant"`
	Kind      string `json:"kind"`
	Doc       string `json:"doc"`
	// Checks is the number of scenarios the property judged.
	Checks int64 `json:"checks"`
	// Violations is the number of counterexamples found.
	Violations int `json:"violations"`
	// Status is "pass", "violated", "unchecked" (no check judged it) or
	// "n/a" (the target cannot play scenarios of the property's kind).
	Status string `json:"status"`
	// Broken lists the laws broken, each reported with its own
	// counterexample.
	Broken []string `json:"broken,omitempty"`
	// Off lists the laws switched off, which nobody judged, each with the
	// reason the user gave.
	Off []OffLaw `json:"off,omitempty"`
}

// OffLaw is a law switched off and why.
type OffLaw struct {
	// Law is the law's name within its property.
	Law    string `json:"law"`
	Reason string `json:"reason"`
}

// MutantRow is one mutant's line in the mutation benchmark.
type MutantRow struct {
	Mutant   string `json:"mutant"`
	Property string `json:"property"`
	Bug      string `json:"bug"`
	// Runs is the number of hunts (seeds); Killed how many found the bug.
	Runs   int `json:"runs"`
	Killed int `json:"killed"`
	// MedianChecks and the seconds are over the hunts that killed. The
	// seconds to kill run to the first failing check; ShrinkSeconds is the
	// median time the hunt spent after it, shrinking the counterexample.
	MedianChecks  int     `json:"medianChecks"`
	MedianSeconds float64 `json:"medianSeconds"`
	MaxSeconds    float64 `json:"maxSeconds"`
	ShrinkSeconds float64 `json:"medianShrinkSeconds"`
	// Size is the size of the smallest counterexample, shrunk by rapid and
	// reduced; ShrunkSize is that counterexample's size after rapid's shrink
	// alone, and Law the law it breaks.
	Size       int    `json:"size"`
	ShrunkSize int    `json:"shrunkSize"`
	Law        string `json:"law,omitempty"`
}

// Case is one counterexample (or, in replay mode, the replayed scenario).
type Case struct {
	// Title names the case, e.g. "single-credit against no-dedup".
	Title string
	// Property is the violated property ("" when nothing failed).
	Property string
	Target   string
	// Seed is the rapid seed that found it (0 if unknown).
	Seed uint64
	// Verdicts are the verdicts to show; failed ones are expanded.
	Verdicts []properties.Verdict
	// CorpusFile is where the case was saved; New says it was new.
	CorpusFile string
	New        bool
	// Replay is the command that replays it.
	Replay string
	// Outcome is the run of the shrunk scenario against Target.
	Outcome *runner.Outcome
	// Consumer is, instead of Outcome, a team's consumer's counterexample
	// (or replayed scenario) under package consumertest: its trace's
	// lines carry their lanes (consumerharness.Entry).
	Consumer *consumerharness.Result
}

// Render writes r as one HTML page.
func Render(w io.Writer, r *Run) error {
	return page.Execute(w, newView(r))
}

// WriteFile renders r to path atomically: a reader, or an interrupted run,
// never sees a half-written page.
func WriteFile(path string, r *Run) error {
	var buf bytes.Buffer
	if err := Render(&buf, r); err != nil {
		return fmt.Errorf("report: render: %w", err)
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	f, err := os.CreateTemp(dir, ".tmp-"+filepath.Base(path)+"-*")
	if err != nil {
		return fmt.Errorf("report: %w", err)
	}
	_, werr := f.Write(buf.Bytes())
	merr := f.Chmod(0o644) // CreateTemp makes it private; a report is for reading
	serr := f.Sync()
	cerr := f.Close()
	if err := errors.Join(werr, merr, serr, cerr); err != nil {
		os.Remove(f.Name())
		return fmt.Errorf("report: write %s: %w", path, err)
	}
	if err := os.Rename(f.Name(), path); err != nil {
		os.Remove(f.Name())
		return fmt.Errorf("report: %w", err)
	}
	return nil
}
