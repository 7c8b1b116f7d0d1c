package properties

import (
	"fmt"
	"strings"

	"github.com/idemcheck/idemcheck/faults/runner"
	"github.com/idemcheck/idemcheck/faults/scenario"
)

// ReportOptions say what a report shows besides the verdict and the trace.
type ReportOptions struct {
	// Scenario adds the scenario as JSON (a terminal shows it behind -v;
	// the corpus file always holds it).
	Scenario bool
	// CorpusFile is the file the counterexample was saved to.
	CorpusFile string
	// Replay is the one command that replays it.
	Replay string
}

// Report renders a failure for a person: the verdict with its model-versus-
// implementation diff, the numbered trace of the (shrunk) scenario, where it
// was saved and how to replay it.
func Report(v Verdict, out *runner.Outcome, o ReportOptions) string {
	var b strings.Builder
	b.WriteString(v.String())
	if out != nil {
		fmt.Fprintf(&b, "\ntrace of the scenario (size %d) against %q:\n", out.Scenario.Size(), out.Target)
		b.WriteString(out.Trace.String())
		if o.Scenario {
			if js, err := scenario.Marshal(out.Scenario); err == nil {
				b.WriteString("\nscenario:\n")
				b.Write(js)
			}
		}
	}
	if o.CorpusFile != "" {
		fmt.Fprintf(&b, "\ncorpus file: %s\n", o.CorpusFile)
	}
	if o.Replay != "" {
		fmt.Fprintf(&b, "replay: %s\n", o.Replay)
	}
	return b.String()
}
