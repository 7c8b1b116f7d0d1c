package main

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/idemcheck/idemcheck/corpus"
	"github.com/idemcheck/idemcheck/properties"
	"github.com/idemcheck/idemcheck/report"
)

// replayJSON is the -json report of a replay.
type replayJSON struct {
	Mode     string               `json:"mode"`
	File     string               `json:"file"`
	Target   string               `json:"target"`
	Kind     string               `json:"kind"`
	Size     int                  `json:"size"`
	Recorded *recordedJSON        `json:"recorded,omitempty"`
	Pass     bool                 `json:"pass"`
	Verdicts []properties.Verdict `json:"verdicts"`
	Trace    []string             `json:"trace"`
	// Situations are the coverage situations the scenario reached.
	Situations []string `json:"situations"`
	HTML       string   `json:"html,omitempty"`
	Exit       int      `json:"exit"`
}

// recordedJSON is what a corpus file says about its scenario.
type recordedJSON struct {
	Property string            `json:"property"`
	Target   string            `json:"target"`
	CaughtBy map[string]string `json:"caughtBy,omitempty"`
}

// runReplay plays one corpus file (or bare scenario) against -target and
// judges it by every selected property of its kind. A file that does not
// load is a usage error naming the file and the field.
func runReplay(o *options, stdout, stderr io.Writer) int {
	start := time.Now()
	c, err := corpus.LoadAny(o.replay)
	if err != nil {
		return say(stderr, exitUsage, "replay: %v", err)
	}
	if c.IsConsumer() {
		return say(stderr, exitUsage, "replay: %s is a consumer-level case (of %s): replay it with fuzzrun consumer NAME -replay %s", o.replay, c.Target, shellQuote(o.replay))
	}
	kind := c.Scenario.Kind
	if !corpus.HasKind(o.target, kind) {
		return say(stderr, exitUsage, "-target: %q cannot play %s scenarios", o.target.Name, kind)
	}
	props := ofKind(o.props, kind)
	if len(props) == 0 {
		return say(stderr, exitUsage, "-property: %s selects no property of the scenario's kind, %s", strings.Join(o.patterns, ","), kind)
	}
	out, verdicts, err := corpus.Judge(c.Scenario, o.target, props)
	if err != nil {
		return say(stderr, exitInternal, "replay %s against %s: %v", o.replay, o.target.Name, err)
	}
	code, failed := exitOK, ""
	for _, v := range verdicts {
		if !v.Pass {
			code = exitViolation
			if failed == "" {
				failed = v.Property
			}
		}
	}
	writeReport(o, stderr, &code, func() *report.Run {
		return &report.Run{Title: "fuzzrun replay of " + o.replay, Mode: "replay", Command: commandLine(o.args), Target: o.target.Name,
			Checks: 1, Elapsed: time.Since(start), Cases: []report.Case{{Title: "replay of " + o.replay + " against " + o.target.Name,
				Property: failed, Target: o.target.Name, Seed: c.Seed, Verdicts: verdicts, CorpusFile: corpusPath(c), Outcome: out}}}
	})
	if o.json {
		r := replayJSON{Mode: "replay", File: o.replay, Target: o.target.Name, Kind: string(kind), Size: c.Scenario.Size(),
			Pass: code == exitOK, Verdicts: verdicts, Trace: out.Trace.Lines(), Situations: reachedBy(c.Scenario, o.target), HTML: o.html, Exit: code}
		if !c.Bare {
			r.Recorded = &recordedJSON{Property: c.Property, Target: c.Target, CaughtBy: c.CaughtBy}
		}
		return writeJSONOr(stdout, r, code)
	}
	fmt.Fprintf(stdout, "fuzzrun: replay of %s against %s: %s scenario of size %d\n", o.replay, o.target.Name, kind, c.Scenario.Size())
	if !c.Bare {
		fmt.Fprintf(stdout, "recorded: found violating %s against %s%s\n", c.Property, c.Target, caughtText(c.CaughtBy))
		if want, ok := c.CaughtBy[o.target.Name]; ok {
			fmt.Fprintf(stdout, "expected here: %s fails (the corpus records this mutant as caught by it)\n", want)
		}
	}
	fmt.Fprintln(stdout)
	for _, v := range verdicts {
		fmt.Fprint(stdout, v.String())
	}
	fmt.Fprintf(stdout, "\nsituations reached: %s\n", situationsText(reachedBy(c.Scenario, o.target)))
	fmt.Fprintf(stdout, "\ntrace:\n%s", out.Trace.String())
	if o.html != "" {
		fmt.Fprintf(stdout, "\nreport: %s\n", o.html)
	}
	return code
}

func corpusPath(c *corpus.Case) string {
	if c.Bare {
		return ""
	}
	return c.Path
}

func caughtText(caught map[string]string) string {
	if len(caught) == 0 {
		return ""
	}
	var parts []string
	for _, m := range slices.Sorted(maps.Keys(caught)) {
		parts = append(parts, fmt.Sprintf("%s (%s)", m, caught[m]))
	}
	return "; it catches " + strings.Join(parts, ", ")
}
