package runner

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/idemcheck/idemcheck/impl/contract/broker"
	"github.com/idemcheck/idemcheck/impl/contract/store"
)

// Trace is the numbered, human account of a run: a line per action and a
// few notes (the start, the phases). A run records its actions as data; the
// lines are formatted only when somebody reads them, since on the passing
// path nobody does.
type Trace struct {
	entries []traceEntry
	cons    *ConsumptionResult
	// deliveries are a projection run's deliveries to its projectors, the
	// bulk of its lines, kept as data (events index proj.Events).
	deliveries []delivery
	hist       []histLine
	proj       *ProjectionResult
	// buf is where a projection run's lists came from, for
	// Outcome.Release to hand back.
	buf *runBuffers
}

// traceEntry is an action (its index, when note and format are empty), a
// projector's delivery (its index in deliveries, when delivery is set), a
// line of a projection's history (its index in hist, when histLine is
// set), a note, or a line still to format from format and args.
type traceEntry struct {
	action   int
	delivery bool
	histLine bool
	note     string
	format   string
	args     []any
}

// delivery is one delivery of an event to a projector of a replica.
type delivery struct {
	atMs               int64 // true time, relative to the start
	replica, projector string
	k, of              int // delivery k (from 1) of the replica's of
	event              int // index in ProjectionResult.Events
	applied            bool
	reason             string
}

// Notes the consumption runner writes.
const (
	noteStart = "\x00start" // formatted from the configuration
	noteDrain = "-- drain: the runner drives the system until nothing is pending --"
)

// action appends the line of action i and returns its number.
func (t *Trace) action(i int) int {
	t.entries = append(t.entries, traceEntry{action: i})
	return len(t.entries)
}

func (t *Trace) note(s string) { t.entries = append(t.entries, traceEntry{note: s}) }

func (t *Trace) notef(format string, args ...any) { t.note(fmt.Sprintf(format, args...)) }

// Addf appends a line, formatted only when it is read: args must be values
// that do not change afterwards.
func (t *Trace) Addf(format string, args ...any) {
	t.entries = append(t.entries, traceEntry{format: format, args: args})
}

// deliver appends the line of a projector's delivery.
func (t *Trace) deliver(d delivery) {
	t.entries = append(t.entries, traceEntry{action: len(t.deliveries), delivery: true})
	t.deliveries = append(t.deliveries, d)
}

func (t *Trace) describeDelivery(d delivery) string {
	ev := t.proj.Events[d.event].Event
	verb := "drops"
	if d.applied {
		verb = "applies"
	}
	return fmt.Sprintf("t=+%dms replica %s %s delivery %d/%d: %s %s %s %s: %s", d.atMs, d.replica, d.projector, d.k, d.of, verb, ev.ID, ev.Kind, ev.OrderID, d.reason)
}

// Len is the number of lines.
func (t *Trace) Len() int {
	if t == nil {
		return 0
	}
	return len(t.entries)
}

// Line returns line n (numbered from 1), or "" if there is none.
func (t *Trace) Line(n int) string {
	if t == nil || n < 1 || n > len(t.entries) {
		return ""
	}
	e := t.entries[n-1]
	switch {
	case e.note == noteStart:
		return t.start()
	case e.note != "":
		return e.note
	case e.format != "":
		return fmt.Sprintf(e.format, e.args...)
	case e.delivery:
		return t.describeDelivery(t.deliveries[e.action])
	case e.histLine:
		return t.describeHist(t.hist[e.action])
	}
	return describe(t.cons, t.cons.Actions[e.action])
}

// Lines returns every line, formatted.
func (t *Trace) Lines() []string {
	out := make([]string, t.Len())
	for i := range out {
		out[i] = t.Line(i + 1)
	}
	return out
}

// String renders the trace as numbered lines.
func (t *Trace) String() string {
	var b strings.Builder
	width := len(strconv.Itoa(t.Len()))
	for i, l := range t.Lines() {
		fmt.Fprintf(&b, "%*d. %s\n", width, i+1, l)
	}
	return b.String()
}

func (t *Trace) start() string {
	c := t.cons.Config
	return fmt.Sprintf("t=+0ms start: %d event(s), %d worker(s), consumers %s, max_attempts=%d lease=%dms ack_timeout=%dms retention=%dms",
		len(t.cons.Events), len(c.Workers), strings.Join(c.Consumers, ","), c.MaxAttempts, c.LeaseMs, c.AckTimeoutMs, c.RetentionMs)
}

// describe tells one action in one line.
func describe(r *ConsumptionResult, a Action) string {
	return fmt.Sprintf("t=+%dms %s", a.AtMs, describeBody(r, a))
}

func describeBody(r *ConsumptionResult, a Action) string {
	switch a.Kind {
	case ActProduce:
		ev := r.Events[a.Event]
		switch {
		case a.Err != "":
			return fmt.Sprintf("produce %s rejected: %s", ev.ID, a.Err)
		case a.Decision == broker.Proceed:
			return fmt.Sprintf("produce %s (order %s, user %s, %d¢) -> offset %d", ev.ID, ev.OrderID, ev.UserID, ev.AmountCents, a.Offset)
		}
		return fmt.Sprintf("produce %s again: gate says %s, nothing enqueued", ev.ID, a.Decision)
	case ActProduceFail:
		return fmt.Sprintf("produce %s fails (gate said %s): %s", a.Key.ID, a.Decision, a.Err)
	case ActDuplicate:
		if a.Offset < 0 {
			return fmt.Sprintf("broker would duplicate %s, but it was never produced", a.Key.ID)
		}
		return fmt.Sprintf("broker duplicates %s (offset %d) %d time(s) -> offsets %v", a.Key.ID, a.Offset, len(a.Offsets), a.Offsets)
	case ActDeliver:
		extra := ""
		if a.LastError != "" {
			extra = ", last_error " + a.LastError
		}
		if a.Origin != broker.Produced {
			extra += ", " + string(a.Origin)
		}
		return fmt.Sprintf("broker delivers %s (offset %d, attempt %d%s) to %s [%s]", a.Key.ID, a.Offset, a.Attempts, extra, a.Worker, a.Key.Consumer)
	case ActCrash:
		if a.Busy {
			return fmt.Sprintf("%s CRASHES holding %s (offset %d); its delivery is never acked", a.Worker, a.Key.ID, a.Offset)
		}
		return fmt.Sprintf("%s crashes while idle", a.Worker)
	case ActAdvance:
		return fmt.Sprintf("time advances %dms", a.Ms)
	case ActSkew:
		return fmt.Sprintf("node %s clock skewed to %+dms (wall reads t=%+dms)", a.Node, a.Ms, a.WallMs)
	case ActClockStep:
		return fmt.Sprintf("node %s clock steps %+dms (wall reads t=%+dms)", a.Node, a.Ms, a.WallMs)
	case ActCleanup:
		ids := make([]string, len(a.Removed))
		for i, rm := range a.Removed {
			ids[i] = rm.Key.ID
		}
		return fmt.Sprintf("cleanup on %s (its wall clock reads t=%+dms) removes %d processed record(s) %v%s", a.Worker, a.WallMs, len(a.Removed), ids, errSuffix(a.Err))
	case ActReplay:
		return fmt.Sprintf("replay: the whole stream (%d message(s)) is delivered again", len(a.Offsets))
	case ActProbe:
		outcome := store.Outcome("")
		if a.Claim != nil {
			outcome = a.Claim.Outcome
		}
		return fmt.Sprintf("probe claims %s -> %s%s%s", a.Key, outcome, answeredNote(a.Claim), errSuffix(a.Err))
	}
	return describeStep(a)
}

// answeredNote shows a claim's answer that the store's conventions
// rewrote, so the trace says what the library said.
func answeredNote(c *store.Claim) string {
	if c == nil || c.Answered == "" {
		return ""
	}
	return fmt.Sprintf(" (the store answered %s; read as %s under mark-on-claim, its record being in processing)", c.Answered, c.Outcome)
}

// describeStep tells a worker's pipeline step.
func describeStep(a Action) string {
	name := a.Worker
	switch a.Kind {
	case ActClaim:
		c := a.Claim
		s := fmt.Sprintf("%s claims %s -> %s", name, a.Key, c.Outcome)
		if c.Outcome == store.Acquired {
			s += fmt.Sprintf(" (token %d, attempt %d", c.Token, c.Attempt)
			if c.Takeover {
				s += ", took over an expired lease"
			}
			s += ")"
		}
		return s + answeredNote(c) + errSuffix(a.Err)
	case ActHandle:
		if a.Handler == nil {
			return fmt.Sprintf("%s runs the handler for %s%s", name, a.Key.ID, errSuffix(a.Err))
		}
		return fmt.Sprintf("%s runs the handler for %s -> %s %s%s", name, a.Key.ID, a.Handler.Kind, a.Handler.Reason, errSuffix(a.Err))
	case ActCommit, ActMark, ActEffect:
		what := "commits effect + processed mark"
		switch a.Kind {
		case ActMark:
			what = "marks processed"
		case ActEffect:
			what = "writes the effect alone (its store cannot commit effect and mark together)"
		}
		switch {
		case a.Stale:
			return fmt.Sprintf("%s %s with token %d -> rejected: %s", name, what, a.Token, a.Err)
		case a.Err != "":
			return fmt.Sprintf("%s %s with token %d -> error: %s", name, what, a.Token, a.Err)
		}
		c := a.Commit
		if c == nil {
			return fmt.Sprintf("%s %s (token %d)", name, what, a.Token)
		}
		s := fmt.Sprintf("%s %s with token %d -> %d credited", name, what, a.Token, c.Credited)
		if c.DuplicatesIgnored > 0 {
			s += fmt.Sprintf(", %d duplicate credit(s) stopped only by the ledger's unique constraint", c.DuplicatesIgnored)
		}
		return s
	case ActFail:
		return fmt.Sprintf("%s releases its claim on %s as failed%s", name, a.Key.ID, errSuffix(a.Err))
	case ActNack:
		return fmt.Sprintf("%s nacks %s (%s)", name, a.Key.ID, reason(a))
	case ActDeadLetter:
		return fmt.Sprintf("%s publishes %s to the DLQ (%s)", name, a.Key.ID, reason(a))
	case ActAck:
		return fmt.Sprintf("%s acks %s", name, a.Key.ID)
	case ActCheck:
		return fmt.Sprintf("%s reads the record of %s", name, a.Key)
	}
	return fmt.Sprintf("%s %s %s%s", name, a.Kind, a.Key, errSuffix(a.Err))
}

func reason(a Action) string {
	if a.Handler == nil {
		return ""
	}
	return a.Handler.Reason
}

func errSuffix(e string) string {
	if e == "" {
		return ""
	}
	return " (error: " + e + ")"
}
