package linearizability

import (
	"fmt"
	"strings"

	"github.com/idemcheck/idemcheck/impl/contract/store"
)

// describeOperation renders an operation for the visualization and reports,
// short enough to fit in its box: "claim(lease=20) → acquired tok=7 #2 @1040".
func describeOperation(input, output any) string {
	in, out := input.(Input), output.(Output)
	var call string
	switch in.Kind {
	case Claim:
		call = fmt.Sprintf("claim(lease=%d)", in.LeaseMs)
	case Commit:
		call = fmt.Sprintf("commit(tok=%d)", in.Token)
		if !in.Credit {
			call = fmt.Sprintf("commit(tok=%d, no credit)", in.Token)
		}
	case Fail:
		call = fmt.Sprintf("fail(tok=%d)", in.Token)
	default:
		call = in.Kind.String()
	}
	return call + " → " + describeAnswer(in, out)
}

func describeAnswer(in Input, out Output) string {
	if out.Ambiguous {
		return "? (no answer)"
	}
	switch in.Kind {
	case Claim:
		c := out.Claim
		if c.Outcome != store.Acquired {
			return fmt.Sprintf("%s @%d", c.Outcome, c.AtMs)
		}
		s := fmt.Sprintf("acquired tok=%d #%d @%d", c.Token, c.Attempt, c.AtMs)
		if c.Takeover {
			s += " takeover"
		}
		return s
	case Commit:
		if out.Answer != OK {
			return out.Answer.String()
		}
		r := out.Commit
		s := fmt.Sprintf("ok credited=%d @%d", r.Credited, r.AtMs)
		if r.DuplicatesIgnored > 0 {
			s += fmt.Sprintf(" dup=%d", r.DuplicatesIgnored)
		}
		return s
	case Fail:
		return out.Answer.String()
	case Read:
		if !out.Found {
			return "absent"
		}
		r := out.Record
		switch r.State {
		case store.Processing:
			return fmt.Sprintf("processing tok=%d #%d lease<%d", r.Token, r.Attempts, r.LeaseUntilMs)
		case store.Processed:
			return fmt.Sprintf("processed #%d @%d", r.Attempts, r.FinishedAtMs)
		}
		return fmt.Sprintf("%s #%d", r.State, r.Attempts)
	}
	return "?"
}

// describeKeyState renders one possible state of a key.
func describeKeyState(s keyState) string {
	if s.status == absent {
		return "absent"
	}
	var b strings.Builder
	b.WriteString(string(statusNames[s.status]))
	if s.status == processing {
		if s.tokenKnown {
			fmt.Fprintf(&b, " tok=%d", s.token)
		} else {
			fmt.Fprintf(&b, " tok>%d", s.maxToken)
		}
		if s.leaseExact {
			fmt.Fprintf(&b, " lease<%d", s.leaseUntil)
		} else {
			fmt.Fprintf(&b, " lease<≥%d", s.leaseUntil)
		}
	}
	fmt.Fprintf(&b, " #%d", s.attempts)
	if s.credited {
		b.WriteString(" credited")
	}
	fmt.Fprintf(&b, " t≥%d", s.nowLow)
	return b.String()
}

// describeState renders the model's state: one key state, or the set of
// those an ambiguous operation left possible.
func describeState(state any) string {
	set := state.(states)
	if len(set) == 1 {
		return describeKeyState(set[0])
	}
	parts := make([]string, len(set))
	for i, s := range set {
		parts[i] = describeKeyState(s)
	}
	return "one of {" + strings.Join(parts, " | ") + "}"
}

// opMeta is an operation's metadata in porcupine: what is shown on hover.
type opMeta struct {
	key string
	err string
}

func describeMetadata(info any) string {
	m, ok := info.(opMeta)
	if !ok {
		return ""
	}
	if m.err != "" {
		return "key " + m.key + "; no answer: " + m.err
	}
	return "key " + m.key
}
