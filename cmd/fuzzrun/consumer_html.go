package main

import (
	"os"
	"path/filepath"
	"time"

	"github.com/idemcheck/idemcheck/internal/consumerharness"
	"github.com/idemcheck/idemcheck/report"
)

// The HTML report of a fuzzrun consumer run (-html, by default under the
// cache directory, see outputs.go; "" for none): the consumer's figures, the laws judged, the coverage
// table and, when a law broke, the counterexample as a timeline with a
// lane per worker and one for the broker (package report).

// consumerHTML renders a -consumer campaign; found is its counterexample
// (nil when no law broke), known the corpus files there were before it.
func consumerHTML(o *options, c consumerharness.Consumer, rep consumerJSON, found *consumerharness.Result, known map[string]bool,
	elapsed time.Duration, interrupted bool) *report.Run {
	cr := &report.ConsumerRun{Consumer: c.Name, Database: o.db, PerSecond: rep.PerSecond,
		Reached: len(consumerharness.SituationsFor(c.Log != nil)) - len(rep.Unreached), Unreached: rep.Unreached}
	var breaches []consumerharness.Breach
	if found != nil {
		breaches = found.Breaches
	}
	cr.Laws = report.ConsumerLaws(c, breaches)
	if rep.Checks == 0 {
		// No scenario judged any law: none passed.
		for i := range cr.Laws {
			if cr.Laws[i].Status == "pass" {
				cr.Laws[i].Status, cr.Laws[i].Summary = statusUnchecked, "no scenario was played"
			}
		}
	}
	r := &report.Run{Title: "fuzzrun consumer " + c.Name, Mode: "consumer", Command: commandLine(o.args), Target: c.Name,
		Seed: rep.Seed, Budget: consumerBudget(o), Elapsed: elapsed, Interrupted: interrupted, Checks: rep.Checks, Unit: "scenarios", Consumer: cr,
		Coverage: report.ConsumerCoverage(rep.Coverage, rep.Checks, consumerharness.SituationsFor(c.Log != nil)...)}
	if found != nil {
		r.Cases = []report.Case{{Title: found.Law + " against " + c.Name, Property: found.Law, Target: c.Name, Seed: found.Seed,
			CorpusFile: found.CorpusFile, New: found.CorpusFile != "" && !known[found.CorpusFile], Replay: rep.Replay, Consumer: found}}
	}
	return r
}

// consumerReplayHTML renders the replay of one consumer-level case.
func consumerReplayHTML(o *options, c consumerharness.Consumer, res *consumerharness.Result, elapsed time.Duration) *report.Run {
	cr := &report.ConsumerRun{Consumer: c.Name, Database: o.db, Laws: report.ConsumerLaws(c, res.Breaches)}
	for _, s := range consumerharness.SituationsFor(c.Log != nil) {
		if res.Outcome.Situations[s] > 0 {
			cr.Reached++
		} else {
			cr.Unreached = append(cr.Unreached, s)
		}
	}
	title := "replay of " + o.replay + " against " + c.Name
	return &report.Run{Title: "fuzzrun consumer " + c.Name + " -replay " + o.replay, Mode: "replay", Command: commandLine(o.args),
		Target: c.Name, Elapsed: elapsed, Checks: 1, Unit: "scenario", Consumer: cr,
		Cases: []report.Case{{Title: title, Property: res.Law, Target: c.Name, CorpusFile: o.replay, Consumer: res}}}
}

// corpusFiles lists the files of dir, to tell a counterexample the run
// saved from one that was there already.
func corpusFiles(dir string) map[string]bool {
	out := map[string]bool{}
	if dir == "" {
		return out
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		out[filepath.Join(dir, e.Name())] = true
	}
	return out
}
