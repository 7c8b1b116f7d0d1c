package report

import (
	"fmt"
	"strings"

	"github.com/idemcheck/idemcheck/faults/runner"
	"github.com/idemcheck/idemcheck/faults/scenario"
	"github.com/idemcheck/idemcheck/impl/contract/store"
	"github.com/idemcheck/idemcheck/impl/reference/consumer"
	"github.com/idemcheck/idemcheck/properties"
)

// workerChip draws a step of a worker's pipeline.
func workerChip(a runner.Action, ex *expiries) chip {
	c := chip{Kind: string(a.Kind), Label: string(a.Kind) + " " + a.Key.ID, Class: "step"}
	switch a.Kind {
	case runner.ActClaim:
		if a.Claim == nil {
			break
		}
		c.Label = "claim " + a.Key.ID + " → " + string(a.Claim.Outcome)
		if a.Claim.Outcome == store.Acquired {
			c.Detail = fmt.Sprintf("token %d · attempt %d", a.Claim.Token, a.Claim.Attempt)
			if a.Claim.Takeover {
				c.Detail += " · took over an expired lease"
				c.Class = "step takeover"
			}
			ex.claimed(a)
		} else {
			c.Class = "step muted"
		}
	case runner.ActHandle:
		if a.Handler != nil {
			c.Label = "handler " + a.Key.ID + " → " + string(a.Handler.Kind)
			c.Detail = a.Handler.Reason
			if a.Handler.Kind != consumer.OK {
				c.Class = "step warn"
			}
		}
	case runner.ActCommit, runner.ActMark:
		ex.settled(a)
		what := "commit"
		if a.Kind == runner.ActMark {
			what = "mark processed"
		}
		c.Label = fmt.Sprintf("%s %s (token %d)", what, a.Key.ID, a.Token)
		switch {
		case a.Stale:
			c.Detail, c.Class = "stale token: rejected", "step muted"
		case a.Err != "":
			c.Detail, c.Class = "error: "+a.Err, "step warn"
		case a.Commit != nil:
			c.Detail, c.Class = fmt.Sprintf("%d credited", a.Commit.Credited), "commit"
		}
	case runner.ActFail:
		ex.settled(a)
		c.Label, c.Detail = "release "+a.Key.ID, "claim marked failed, re-claimable"
	case runner.ActNack:
		ex.answered(a)
		c.Label, c.Class = "nack "+a.Key.ID, "step warn"
		if a.Handler != nil {
			c.Detail = a.Handler.Reason
		}
	case runner.ActDeadLetter:
		ex.answered(a)
		c.Label, c.Class = "→ DLQ "+a.Key.ID, "step dlq"
		if a.Handler != nil {
			c.Detail = a.Handler.Reason
		}
	case runner.ActAck:
		ex.answered(a)
		c.Label, c.Class = "ack "+a.Key.ID, "step ack"
	}
	if c.Detail == "" && a.Err != "" {
		c.Detail = "error: " + a.Err
	}
	return c
}

// ledgerChip draws the ledger write a commit made, if any.
func ledgerChip(a runner.Action, amount map[string]int64) (chip, bool) {
	if a.Commit == nil || (a.Commit.Credited == 0 && a.Commit.DuplicatesIgnored == 0) {
		return chip{}, false
	}
	c := chip{Kind: "ledger-write", Class: "ledger"}
	if a.Commit.Credited > 0 {
		c.Label = fmt.Sprintf("+ %s %d¢", a.Key.ID, amount[a.Key.ID])
		c.Detail = fmt.Sprintf("credited for %s by %s", a.Key.Consumer, a.Worker)
	}
	if a.Commit.DuplicatesIgnored > 0 {
		if c.Label == "" {
			c.Label = "second credit of " + a.Key.ID
		}
		c.Detail = strings.TrimPrefix(c.Detail+" · unique constraint stopped a second credit", " · ")
		c.Class = "ledger warn"
	}
	return c, true
}

func clockChip(a runner.Action, steps []scenario.Step, skew map[string]int64) chip {
	c := chip{Kind: string(a.Kind), Class: "clock skew"}
	if a.Step < 0 || a.Step >= len(steps) {
		c.Label = string(a.Kind)
		return c
	}
	st := steps[a.Step]
	if a.Kind == runner.ActSkew {
		skew[st.Node] = st.Ms
		c.Label = fmt.Sprintf("%s skewed to %s", st.Node, signedMs(st.Ms))
	} else {
		skew[st.Node] += st.Ms
		c.Label = fmt.Sprintf("%s clock steps %s", st.Node, signedMs(st.Ms))
	}
	c.Detail = fmt.Sprintf("%s's wall clock reads t=%s", st.Node, signedMs(a.AtMs+skew[st.Node]))
	return c
}

func cleanupChip(a runner.Action, nodeOf map[string]string, skew map[string]int64, r *runner.ConsumptionResult) chip {
	node := nodeOf[a.Worker]
	c := chip{Kind: string(a.Kind), Label: "cleanup", Class: "cleanup",
		Detail: fmt.Sprintf("by %s's wall clock t=%s", node, signedMs(a.AtMs+skew[node]))}
	var removed []string
	for _, rm := range a.Removed {
		s := rm.Key.ID
		if properties.Premature(r, rm) {
			s += " (too young!)"
			c.Class = "cleanup warn"
		}
		removed = append(removed, s)
	}
	if len(removed) > 0 {
		c.Label = "cleanup removes " + strings.Join(removed, ", ")
	}
	return c
}
