package main

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/idemcheck/idemcheck/report"
)

// printTable is the human form of the benchmark: a line per mutant, then
// the goals.
func (b *benchmark) printTable(w io.Writer, results []*mutantResult, notes []string) {
	fmt.Fprintf(w, "fuzzrun: mutation benchmark: %d mutant(s) x %d run(s), at most %d checks per hunt, seed %d, %d worker(s), %.1fs\n\n",
		len(results), b.o.runs, b.o.checks, b.o.seed, b.o.workers, b.elapsed.Seconds())
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	head := "mutant\tkilled by\tkilled\tmedian checks\tmedian s\tmax s\tshrink s\tshrunk size\tsize"
	if b.o.corpusDir != "" {
		head += "\tcorpus file"
	}
	fmt.Fprintln(tw, head)
	for _, r := range results {
		killedBy := r.row.Property
		if r.row.Law != "" {
			killedBy = r.row.Law
		}
		line := fmt.Sprintf("%s\t%s\t%d/%d\t%d\t%.3f\t%.3f\t%.3f\t%d\t%d", r.row.Mutant, killedBy, r.row.Killed, r.row.Runs,
			r.row.MedianChecks, r.row.MedianSeconds, r.row.MaxSeconds, r.row.ShrinkSeconds, r.row.ShrunkSize, r.row.Size)
		if r.finding != nil && r.finding.file != "" {
			line += "\t" + r.finding.file
			if !r.finding.created {
				line += " (already known)"
			}
		}
		fmt.Fprintln(tw, line)
	}
	tw.Flush()
	fmt.Fprintln(w)
	for _, n := range notes {
		fmt.Fprintln(w, n)
	}
	if b.o.html != "" {
		fmt.Fprintf(w, "report: %s\n", b.o.html)
	}
}

// mutantsJSON is the -json report of the mutation benchmark.
type mutantsJSON struct {
	Mode        string       `json:"mode"`
	Seed        uint64       `json:"seed"`
	Runs        int          `json:"runs"`
	MaxChecks   int64        `json:"maxChecks"`
	Workers     int          `json:"workers"`
	ElapsedMs   int64        `json:"elapsedMs"`
	Interrupted bool         `json:"interrupted"`
	Mutants     []mutantJSON `json:"mutants"`
	Goals       []string     `json:"goals"`
	Errors      []string     `json:"errors,omitempty"`
	HTML        string       `json:"html,omitempty"`
	Exit        int          `json:"exit"`
}

type mutantJSON struct {
	report.MutantRow
	CorpusFile string `json:"corpusFile,omitempty"`
	New        bool   `json:"new"`
}

func (b *benchmark) jsonReport(results []*mutantResult, notes []string, code int) mutantsJSON {
	r := mutantsJSON{Mode: "mutants", Seed: b.o.seed, Runs: b.o.runs, MaxChecks: b.o.checks, Workers: b.o.workers,
		ElapsedMs: b.elapsed.Milliseconds(), Interrupted: b.interrupted, Goals: notes, Errors: b.errors, HTML: b.o.html, Exit: code}
	for _, res := range results {
		m := mutantJSON{MutantRow: res.row}
		if res.finding != nil {
			m.CorpusFile, m.New = res.finding.file, res.finding.created
		}
		r.Mutants = append(r.Mutants, m)
	}
	return r
}

func (b *benchmark) writeHTML(results []*mutantResult, notes []string) error {
	if b.o.html == "" {
		return nil
	}
	r := &report.Run{Title: "fuzzrun mutation benchmark", Mode: "mutants", Command: commandLine(b.o.args), Seed: b.o.seed,
		Workers: b.o.workers, Budget: fmt.Sprintf("%d runs x at most %d checks", b.o.runs, b.o.checks), Elapsed: b.elapsed,
		Interrupted: b.interrupted, Notes: notes}
	for _, res := range results {
		r.Mutants = append(r.Mutants, res.row)
		if res.finding == nil {
			continue
		}
		if rc, ok := res.finding.reportCase(); ok {
			rc.Title = fmt.Sprintf("%s, killed by %s", res.row.Mutant, res.row.Property)
			r.Cases = append(r.Cases, rc)
		}
	}
	for _, ks := range b.kills {
		for _, k := range ks {
			r.Checks += int64(k.Checks)
		}
	}
	return report.WriteFile(b.o.html, r)
}
