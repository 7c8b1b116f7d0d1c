package properties

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/idemcheck/idemcheck/faults/runner"
	"github.com/idemcheck/idemcheck/faults/scenario"
	"github.com/idemcheck/idemcheck/impl/adapter/synctime"
	"github.com/idemcheck/idemcheck/impl/contract/store"
	"github.com/idemcheck/idemcheck/impl/system"
	"github.com/idemcheck/idemcheck/properties/coverage"
)

// JudgeOptions narrow a judgement.
type JudgeOptions struct {
	// Off switches laws off ("property/law" → the reason, recorded in the
	// verdict). A law switched off is judged by nobody.
	Off map[string]string
	// Coverage, when set, watches the run and counts the situations it
	// reached (package coverage).
	Coverage *coverage.Observer
	// T, when set, is the test a scenario of a target whose store reads
	// time.Now (system.WithTimeNowStore) plays in: each in a
	// testing/synctest bubble of its own. A goroutine the store leaves
	// running after the scenario is then a *LeakError (law LeakLaw),
	// unless the library says why it lingers. Without T such a scenario
	// plays in the caller's bubble, if any.
	T *testing.T
	// breachesOnly skips what only a report reads — a passing verdict's
	// summary and notes — as hunts do: most of their runs pass, and nobody
	// reads why.
	breachesOnly bool
}

// Judge plays s against target with the monitors of props attached and
// returns the outcome and a verdict per property of the scenario's kind
// (nil props: every property of that kind).
func Judge(s *scenario.Scenario, target system.Target, props []Property, opts ...JudgeOptions) (*runner.Outcome, []Verdict, error) {
	var o JudgeOptions
	if len(opts) > 0 {
		o = opts[0]
	}
	if props == nil {
		props = ForKind(s.Kind)
	}
	judged := make([]Property, 0, len(props))
	for _, p := range props {
		if p.Kind == s.Kind {
			judged = append(judged, p)
		}
	}
	monitors := make([]Monitor, len(judged))
	obs := make([]runner.Observer, 0, len(judged)+1)
	for i, p := range judged {
		if p.Monitor != nil {
			monitors[i] = p.Monitor()
			obs = append(obs, monitors[i])
		}
	}
	if o.Coverage != nil {
		obs = append(obs, o.Coverage)
	}
	out, err := play(o.T, s, target, obs)
	var leak *LeakError
	if errors.As(err, &leak) {
		// The run itself completed: its outcome is the trace to read.
		return out, nil, err
	}
	if o.Coverage != nil {
		o.Coverage.End(out)
	}
	if err != nil {
		return nil, nil, err
	}
	verdicts := make([]Verdict, len(judged))
	for i, p := range judged {
		var breaches []Breach
		if m := monitors[i]; m != nil {
			breaches = append(breaches, m.Breaches()...)
		}
		if p.Final != nil {
			breaches = append(breaches, p.Final(out, monitors[i])...)
		}
		verdicts[i] = p.verdict(out, monitors[i], breaches, o.Off, !o.breachesOnly)
	}
	return out, verdicts, nil
}

// LeakLaw is the law a failure names when a store that reads time.Now
// left goroutines running after the scenario ended (see JudgeOptions.T).
const LeakLaw = "runner/goroutines-left"

// LeakError is a scenario whose store left goroutines running once it
// ended: a ticker or worker the library never stops, which would outlive
// every scenario of a campaign.
type LeakError struct {
	Leak *synctime.Leak
}

func (e *LeakError) Error() string {
	return "the store left goroutines running after the scenario: " + e.Leak.Error()
}

// play runs s against target: in a testing/synctest bubble of t's when
// the target's store reads time.Now and t is given, directly otherwise.
func play(t *testing.T, s *scenario.Scenario, target system.Target, obs []runner.Observer) (*runner.Outcome, error) {
	c := target.Consumption
	if t == nil || s.Kind != scenario.KindConsumption || c == nil || c.TimeNow == nil {
		return runner.Run(s, target, obs...)
	}
	var out *runner.Outcome
	var err error
	scenarioRun := func(*testing.T) { out, err = runner.Run(s, target, obs...) }
	if c.TimeNow.Lingering != "" {
		// Tolerated: whether goroutines were left does not matter, and
		// their stacks, read after every scenario, would cost more with
		// every scenario as they pile up.
		if _, berr := synctime.TestTolerant(t, scenarioRun); berr != nil {
			return nil, berr
		}
		return out, err
	}
	leak, berr := synctime.Test(t, scenarioRun)
	switch {
	case berr != nil:
		return nil, berr
	case err != nil:
		return nil, err
	case leak != nil:
		return out, &LeakError{Leak: leak}
	}
	return out, nil
}

// Failed returns the verdicts that failed.
func Failed(vs []Verdict) []Verdict {
	var out []Verdict
	for _, v := range vs {
		if !v.Pass {
			out = append(out, v)
		}
	}
	return out
}

// snap is the part of the store the monitors compare.
type snap struct {
	Records []store.Record
	Ledger  []store.Entry
}

// snapshot reads the records and the ledger as they are now. Monitors call
// it only after actions that may write the store (ActionKind.WritesStore)
// and around a stale token's step; the view caches the reads until the next
// action, so several monitors share one.
func snapshot(v *runner.View) snap {
	return snap{Records: v.Records(), Ledger: v.Ledger()}
}

// equal reports whether s and o hold the same records and entries.
func (s snap) equal(o snap) bool {
	return slices.Equal(s.Records, o.Records) && slices.Equal(s.Ledger, o.Ledger)
}

// keyID is the consumer-scoped id of a key, as the ledger knows it.
func keyID(k store.Key) string { return k.Consumer + "/" + k.ID }

// lineDetail is a detail pointing at the trace line of an action.
func lineDetail(a *runner.Action, format string, args ...any) string {
	return lineOf(a.Line) + fmt.Sprintf(format, args...)
}
