package properties

import (
	"fmt"
	"strings"

	"github.com/idemcheck/idemcheck/faults/runner"
	"github.com/idemcheck/idemcheck/faults/scenario"
)

// Report renders a failure for a person: the verdict with its model-versus-
// implementation diff, the numbered trace of the (shrunk) scenario, the
// scenario itself as JSON, and how to replay it.
func Report(v Verdict, out *runner.Outcome, replay string) string {
	var b strings.Builder
	b.WriteString(v.String())
	if out != nil {
		fmt.Fprintf(&b, "\ntrace of the scenario (size %d) against %q:\n", out.Scenario.Size(), out.Target)
		b.WriteString(out.Trace.String())
		if js, err := scenario.Marshal(out.Scenario); err == nil {
			b.WriteString("\nscenario:\n")
			b.Write(js)
		}
	}
	if replay != "" {
		fmt.Fprintf(&b, "\nreplay: %s\n", replay)
	}
	return b.String()
}
