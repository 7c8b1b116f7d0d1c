package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/idemcheck/idemcheck/internal/consumerharness"
)

// fuzzrun merge CERT... combines the certificates of the shards of one
// split model check into its verdict: VERIFIED only when every shard
// 0..N-1 is there exactly once, of the same search, and verified; else the
// least counterexample among them (by CompareOrders, ties to the lower
// shard: the unsplit search's, whichever shard ran first), or what is
// missing.

const mergeHelp = `The verdict is VERIFIED (exit 0) only when the certificates are the shards 0..N-1
of one search (the same consumer, bounds and fingerprint), each once, and each
verified. A counterexample in any of them is one of the consumer's (exit 1): the
least among them, which is the unsplit search's when every shard is there.
Certificates of different searches, a shard given twice or a file that is not a
certificate exit 2; a shard missing or stopped short of its bounds, 4.
`

// mergeReport is the merged verdict, -json's report.
type mergeReport struct {
	Verdict  string `json:"verdict"`
	Consumer string `json:"consumer,omitempty"`
	Shards   int    `json:"shards,omitempty"`
	// Missing, Duplicate, Mismatched and Unfinished name what keeps the
	// shards from a verdict.
	Missing    []string `json:"missing,omitempty"`
	Duplicate  []string `json:"duplicate,omitempty"`
	Mismatched []string `json:"mismatched,omitempty"`
	Unfinished []string `json:"unfinished,omitempty"`
	Schedules  int64    `json:"schedules"`
	States     int64    `json:"states"`
	// Slowest is the longest shard's time, Total the shards' summed.
	Slowest time.Duration `json:"slowestNs"`
	Total   time.Duration `json:"totalNs"`
	// From is the file of the shard whose counterexample is reported.
	From           string                     `json:"from,omitempty"`
	Counterexample *certificateCounterexample `json:"counterexample,omitempty"`
	Exit           int                        `json:"exit"`
}

// runMerge is fuzzrun merge.
func runMerge(o *options, stdout, stderr io.Writer) int {
	type shardFile struct {
		path string
		cert *certificate
	}
	var files []shardFile
	for _, p := range o.positional {
		cert, err := readCertificate(p)
		if err != nil {
			return say(stderr, exitUsage, "merge: %v", err)
		}
		files = append(files, shardFile{p, cert})
	}
	slices.SortStableFunc(files, func(a, b shardFile) int { return a.cert.Shard - b.cert.Shard })
	ref := files[0]
	refBounds, _ := json.Marshal(ref.cert.Bounds)
	rep := mergeReport{Consumer: ref.cert.Consumer, Shards: ref.cert.Shards}
	seen := map[int]string{}
	var ces []shardFile
	for _, f := range files {
		c := f.cert
		name := fmt.Sprintf("%s (shard %d/%d)", f.path, c.Shard, c.Shards)
		bounds, _ := json.Marshal(c.Bounds)
		var diff []string
		if c.Consumer != ref.cert.Consumer {
			diff = append(diff, fmt.Sprintf("consumer %s, not %s", c.Consumer, ref.cert.Consumer))
		}
		if c.Shards != ref.cert.Shards {
			diff = append(diff, fmt.Sprintf("%d shards, not %d", c.Shards, ref.cert.Shards))
		}
		if !bytes.Equal(bounds, refBounds) {
			diff = append(diff, "other bounds")
		}
		if c.Fingerprint != ref.cert.Fingerprint {
			diff = append(diff, "another fingerprint (consumer, database, reductions or build)")
		}
		if len(diff) > 0 {
			rep.Mismatched = append(rep.Mismatched, fmt.Sprintf("%s: %s than %s", name, strings.Join(diff, ", "), ref.path))
			continue
		}
		if first, dup := seen[c.Shard]; dup {
			rep.Duplicate = append(rep.Duplicate, fmt.Sprintf("shard %d/%d given twice: %s and %s", c.Shard, c.Shards, first, f.path))
			continue
		}
		seen[c.Shard] = f.path
		rep.Schedules += c.Schedules
		rep.States += c.States
		rep.Total += c.ElapsedNs
		rep.Slowest = max(rep.Slowest, c.ElapsedNs)
		switch c.Verdict {
		case verdictCounterexample:
			ces = append(ces, f)
		case verdictNotVerified:
			rep.Unfinished = append(rep.Unfinished, fmt.Sprintf("shard %d/%d stopped: %s; %s", c.Shard, c.Shards, c.Stopped, c.Explored))
		}
	}
	for i := range ref.cert.Shards {
		if _, ok := seen[i]; !ok {
			rep.Missing = append(rep.Missing, fmt.Sprintf("shard %d/%d missing", i, ref.cert.Shards))
		}
	}
	if len(ces) > 0 {
		// The least counterexample; files are in shard order, so a tie
		// goes to the lower shard.
		best := ces[0]
		for _, f := range ces[1:] {
			if consumerharness.CompareOrders(f.cert.Counterexample.Order, best.cert.Counterexample.Order) < 0 {
				best = f
			}
		}
		rep.From, rep.Counterexample = best.path, best.cert.Counterexample
	}
	switch {
	case len(rep.Mismatched) > 0 || len(rep.Duplicate) > 0:
		rep.Verdict, rep.Exit = "BAD CERTIFICATES", exitUsage
	case rep.Counterexample != nil:
		rep.Verdict, rep.Exit = "COUNTEREXAMPLE", exitViolation
	case len(rep.Missing) > 0 || len(rep.Unfinished) > 0:
		rep.Verdict, rep.Exit = "NOT VERIFIED", exitInconclusive
	default:
		rep.Verdict, rep.Exit = "VERIFIED", exitOK
	}
	if o.json {
		return writeJSONOr(stdout, rep, rep.Exit)
	}
	printMerge(stdout, rep)
	return rep.Exit
}

// printMerge prints the merged verdict for a person.
func printMerge(w io.Writer, rep mergeReport) {
	problems := slices.Concat(rep.Mismatched, rep.Duplicate, rep.Missing, rep.Unfinished)
	switch rep.Verdict {
	case "VERIFIED":
		fmt.Fprintf(w, "VERIFIED %s within these bounds: every one of the %d shards verified\n", rep.Consumer, rep.Shards)
	case "COUNTEREXAMPLE":
		ce := rep.Counterexample
		fmt.Fprintf(w, "COUNTEREXAMPLE %s breaks %s: %d preemption(s), %d step(s) and the drain break it (from %s)\n",
			rep.Consumer, ce.Law, ce.Preemptions, ce.Steps, rep.From)
		if len(problems) > 0 {
			// Missing or unfinished shards: one of them may hold a
			// counterexample that comes first.
			fmt.Fprintf(w, "  not every shard is here, so a shorter one may exist: %s\n", strings.Join(problems, "; "))
		}
	default:
		fmt.Fprintf(w, "%s %s: %s\n", rep.Verdict, rep.Consumer, strings.Join(problems, "; "))
	}
	fmt.Fprintf(w, "searched: %d schedules, %d states in all; the slowest shard took %s, the shards %s together\n",
		rep.Schedules, rep.States, rep.Slowest.Round(time.Millisecond), rep.Total.Round(time.Millisecond))
	if ce := rep.Counterexample; ce != nil {
		if ce.Summary != "" {
			fmt.Fprintf(w, "%s: %s\n", ce.Law, ce.Summary)
		}
		if ce.CorpusFile != "" {
			fmt.Fprintf(w, "corpus file: %s\n", ce.CorpusFile)
		}
		var out bytes.Buffer
		if json.Indent(&out, ce.Scenario, "", "  ") == nil {
			fmt.Fprintf(w, "scenario:\n%s\n", out.String())
		}
	}
}
