package report

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/idemcheck/idemcheck/faults/scenario"
	"github.com/idemcheck/idemcheck/impl/contract/broker"
	"github.com/idemcheck/idemcheck/internal/consumerharness"
	"github.com/idemcheck/idemcheck/properties"
	"github.com/idemcheck/idemcheck/properties/coverage"
)

// ConsumerRun is what a run of a team's consumer under package
// consumertest reports (fuzzrun consumer, mode "consumer"): the laws it
// was judged by and its figures, beside the coverage table (Run.Coverage,
// see ConsumerCoverage) and, when a law broke, the counterexample
// (Run.Cases, a Case with Consumer set).
type ConsumerRun struct {
	// Consumer names the consumer; Database is the backend it ran on.
	Consumer, Database string
	// Laws are the laws judged, each with its verdict (see ConsumerLaws).
	Laws []LawRow
	// PerSecond is the scenarios played per second.
	PerSecond float64
	// Reached counts the situations (consumerharness.Situations) some
	// scenario reached; Unreached names the others.
	Reached   int
	Unreached []string
}

// LawRow is one law's line.
type LawRow struct {
	Law string `json:"law"`
	Doc string `json:"doc"`
	// Status is "pass", "violated", "n/a" (not judged for this consumer)
	// or "unchecked" (no scenario was played).
	Status string `json:"status"`
	// Summary is the breach's line, or why the law was not judged.
	Summary string `json:"summary,omitempty"`
}

// ConsumerLaws are the rows of the laws table: every law of
// consumerharness.Laws, violated when one of breaches breaks it, not judged
// when c is not judged by it (atomicity without a Dedupe query), passing
// otherwise.
func ConsumerLaws(c consumerharness.Consumer, breaches []consumerharness.Breach) []LawRow {
	judged := c.Judged()
	var out []LawRow
	for _, law := range consumerharness.Laws {
		if consumerharness.LogOnly(law) && c.Log == nil {
			continue // a queue consumer's table is as it always was
		}
		row := LawRow{Law: law, Doc: consumerharness.LawDoc(law), Status: "pass"}
		if i := slices.IndexFunc(breaches, func(b consumerharness.Breach) bool { return b.Law == law }); i >= 0 {
			row.Status, row.Summary = "violated", breaches[i].Summary
		} else if !slices.Contains(judged, law) {
			row.Status, row.Summary = "n/a", notJudged(c, law)
		}
		out = append(out, row)
	}
	return out
}

// notJudged says why c is not judged by law.
func notJudged(c consumerharness.Consumer, law string) string {
	switch law {
	case consumerharness.LawBoundedAttempts:
		return "a log broker has no retry policy"
	case consumerharness.LawReplay:
		return "a log broker's run ends once quiet: reprocessing is the replay step, judged under single-credit"
	case consumerharness.LawCommitAfterApply:
		return "the effects are totals, which say nothing of one record"
	case consumerharness.LawPartitionOrder:
		return "the consumer claims no per-partition order"
	}
	return "the consumer gives no Dedupe query"
}

// ConsumerKind is the kind of the coverage rows of a consumer run.
const ConsumerKind = scenario.Kind("consumer")

// ConsumerCoverage is the coverage table of a consumer run of runs
// scenarios: for each of consumerharness.Situations, how many reached it.
//
// sits are the situations the rows are of (none: consumerharness.Situations,
// a queue consumer's; a log consumer's are consumerharness.LogSituations).
func ConsumerCoverage(reached map[string]int, runs int64, sits ...string) []coverage.Row {
	var out []coverage.Row
	if len(sits) == 0 {
		sits = consumerharness.Situations
	}
	for _, s := range sits {
		n := int64(reached[s])
		out = append(out, coverage.Row{Name: s, Kind: ConsumerKind, Doc: situationDoc(ConsumerKind, s), Runs: runs, Reached: n, Missing: runs > 0 && n == 0})
	}
	return out
}

// consumerCaseView fills in cv for a consumer-level counterexample (or a
// replayed scenario that passed).
func consumerCaseView(cv *caseView, res *consumerharness.Result) {
	cv.Kind, cv.DiffLabel = string(ConsumerKind), "expected (-want) against the consumer (+got)"
	s, out := res.Scenario, res.Outcome
	for _, b := range res.Breaches {
		cv.Failed = append(cv.Failed, properties.Verdict{Property: b.Law, Law: b.Law, Summary: b.Summary, Details: b.Details, Diff: b.Diff})
	}
	if out == nil || s == nil {
		return
	}
	cv.Size = s.Size()
	cv.Facts = fmt.Sprintf("%d worker(s), %d event(s), on %s", s.Workers, len(s.Events), out.Backend)
	if res.ShrunkSize > s.Size() {
		cv.Facts += fmt.Sprintf(" · reduced from %d step(s)", res.ShrunkSize)
	}
	cv.Trace = out.Trace.Lines()
	if js, err := s.Marshal(); err == nil {
		cv.Scenario = string(js)
	}
	cv.Timeline = consumerTimeline(res)
}

// consumerTimeline lays out a consumer run: the broker on the left, a lane
// per worker, a row per trace line; the phases of the run (drain, replay)
// are separators.
func consumerTimeline(res *consumerharness.Result) *timeline {
	s, out := res.Scenario, res.Outcome
	tl := &timeline{Kind: string(ConsumerKind)}
	tl.Lanes = append(tl.Lanes, lane{ID: consumerharness.LaneBroker, Name: "broker", Sub: "produce · deliveries · time · DLQ", Class: "world"})
	for i := range s.Workers {
		name := fmt.Sprintf("w%d", i+1)
		tl.Lanes = append(tl.Lanes, lane{ID: name, Name: name, Sub: "the handler's SQL · acks · crashes", Class: "worker"})
	}
	marks := consumerMarks(res)
	dlq := 0
	for _, e := range out.Trace.Entries() {
		if e.Kind == consumerharness.KindPhase || e.Lane == consumerharness.LaneHarness {
			tl.Rows = append(tl.Rows, row{Line: e.Line, Separator: strings.Trim(e.Text, "- ")})
			continue
		}
		rw := row{Line: e.Line, Tip: e.Text, Time: "t=" + strconv.FormatInt(e.AtMs, 10) + "ms", Flags: marks[e.Line]}
		if e.Step > 0 {
			rw.Step = "step " + strconv.Itoa(e.Step)
		}
		cells := map[string][]chip{}
		id, c := entryChip(e)
		cells[id] = append(cells[id], c)
		if e.Kind == consumerharness.KindDeliver || e.Kind == consumerharness.KindRedeliver {
			cells[e.Worker] = append(cells[e.Worker], chip{Kind: "receive", Label: "◀ receives " + e.Event, Detail: "attempt " + strconv.Itoa(e.Attempt), Class: "deliver"})
		}
		for ; dlq < e.DLQ && dlq < len(out.DLQ); dlq++ {
			d := out.DLQ[dlq]
			c := chip{Kind: "dlq", Label: "→ DLQ " + d.Key, Detail: fmt.Sprintf("offset %d · attempts %d · %s", d.Offset, d.Attempts, quoteShort(d.LastError)), Class: "dlq"}
			if d.Poison {
				c.Detail = "poison · " + c.Detail
			}
			cells[consumerharness.LaneBroker] = append(cells[consumerharness.LaneBroker], c)
		}
		tl.addRow(rw, cells)
	}
	return tl
}

// endsDelivery reports whether a line of kind k is how a worker's handling
// of an event ended.
func endsDelivery(k consumerharness.EntryKind) bool {
	switch k {
	case consumerharness.KindAck, consumerharness.KindNack, consumerharness.KindDeadLetter, consumerharness.KindCrash:
		return true
	}
	return false
}

// leadingID is the event or user id a breach's detail starts with.
var leadingID = regexp.MustCompile(`^([A-Za-z0-9_.-]+):? `)

// consumerMarks says, by trace line, why the line is marked: the lines a
// broken law points at, each with the details of the breaches that name
// its event (or, for totals, the event's user). Where an effect was
// applied too often (single-credit) they are the statements that applied
// the event once too many (its second write of the effects: the first is
// due), where the replay changed the effects (replay-unchanged) the
// writes after the replay, where a poison event was applied every write
// of it; the acks around them did nothing wrong. Otherwise (an event
// lost, dead-lettered, not atomic) they are the ends of the event's
// deliveries and its dead-lettering. A breach judged once quiet marks
// nothing the replay did, and one that lasts after the replay marks what
// made it before the replay, if anything did.
func consumerMarks(res *consumerharness.Result) map[int][]string {
	marks := map[int][]string{}
	if res.Scenario == nil || res.Outcome == nil {
		return marks
	}
	entries := res.Outcome.Trace.Entries()
	quietAt := len(entries) + 1 // the line of the first quiet: the replay comes after it
	for _, e := range entries {
		if e.Kind == consumerharness.KindPhase && strings.HasPrefix(e.Text, "-- quiet at") {
			quietAt = e.Line
			break
		}
	}
	applied := appliedEffects(entries)
	add := func(line int, note string) {
		if !slices.Contains(marks[line], note) {
			marks[line] = append(marks[line], note)
		}
	}
	for _, b := range res.Breaches {
		for _, d := range b.Details {
			m := leadingID.FindStringSubmatch(d)
			if m == nil {
				continue
			}
			onceQuiet := strings.Contains(d, "once quiet") || strings.Contains(b.Summary, "once quiet")
			for _, ev := range res.Scenario.Events {
				if ev.ID != m[1] && ev.User != m[1] {
					continue
				}
				var lines []int
				writes := applied[ev.ID]
				switch {
				case b.Law == consumerharness.LawSingleCredit && len(writes) > 1:
					lines = writes[1:] // the first application is due
				case b.Law == consumerharness.LawReplay:
					for _, l := range writes {
						if l > quietAt {
							lines = append(lines, l)
						}
					}
				case b.Law == consumerharness.LawHealthyApplied && ev.Poison && len(writes) > 0:
					lines = writes // a poison event is never to be applied
				}
				if len(lines) == 0 {
					lines = deliveryEnds(entries, res.Outcome.DLQ, ev.ID)
				}
				// A breach judged once quiet points at nothing the replay
				// did; one that lasts after the replay, at what made it
				// before the replay if anything did.
				before := slices.DeleteFunc(slices.Clone(lines), func(l int) bool { return l > quietAt })
				if onceQuiet || (b.Law != consumerharness.LawReplay && len(before) > 0) {
					lines = before
				}
				for _, l := range lines {
					add(l, b.Law+": "+d)
				}
			}
		}
	}
	return marks
}

// deliveryEnds lists the lines that end a delivery of event id (an ack,
// a nack, a dead-lettering, a crash) and those where the broker
// dead-lettered it.
func deliveryEnds(entries []consumerharness.Entry, dlq []broker.DLQEntry, id string) []int {
	var out []int
	n := 0
	for _, e := range entries {
		grew := dlq[min(n, len(dlq)):min(max(e.DLQ, n), len(dlq))]
		n = max(n, e.DLQ)
		if (endsDelivery(e.Kind) && e.Event == id) || slices.ContainsFunc(grew, func(x broker.DLQEntry) bool { return x.Key == id }) {
			out = append(out, e.Line)
		}
	}
	return out
}

// appliedEffects lists, by event, the lines of the statements that
// applied its effect: writes of the consumer's effects that changed rows,
// outside a transaction or in one that its worker then committed.
func appliedEffects(entries []consumerharness.Entry) map[string][]int {
	out := map[string][]int{}
	for i, e := range entries {
		if !e.Effect || e.Event == "" {
			continue
		}
		if e.InTx && !committedAfter(entries[i+1:], e.Lane) {
			continue
		}
		out[e.Event] = append(out[e.Event], e.Line)
	}
	return out
}

// committedAfter reports whether lane's transaction, open at the start of
// entries, ends in a commit that succeeded.
func committedAfter(entries []consumerharness.Entry, lane string) bool {
	for _, e := range entries {
		if e.Lane != lane {
			continue
		}
		switch {
		case e.Kind == consumerharness.KindSQL && e.Op == "commit":
			return !strings.HasPrefix(e.Result, "error")
		case e.Kind == consumerharness.KindSQL && e.Op == "rollback",
			e.Kind == consumerharness.KindCrash, e.Kind == consumerharness.KindContextEnded:
			return false
		}
	}
	return false
}

// entryChip draws one trace line and says in which lane.
func entryChip(e consumerharness.Entry) (string, chip) {
	text := strings.TrimPrefix(e.Text, "t="+strconv.FormatInt(e.AtMs, 10)+"ms ")
	if e.Worker != "" {
		text = strings.TrimPrefix(text, e.Worker+" ")
	}
	c := chip{Kind: string(e.Kind), Label: text, Class: "step"}
	switch e.Kind {
	case consumerharness.KindProduce:
		c.Label, c.Class = "produce "+e.Event, "produce"
		_, c.Detail, _ = strings.Cut(text, ": ")
	case consumerharness.KindDuplicate:
		c.Label, c.Detail, c.Class = "duplicate "+e.Event, parenthesised(text), "fault"
	case consumerharness.KindReplay:
		c.Label, c.Detail, c.Class = "replay stream", parenthesised(text), "fault"
	case consumerharness.KindTime:
		c.Class = "clock"
		if ms, at, ok := strings.Cut(strings.TrimPrefix(text, "time moves "), " to "); ok {
			c.Label, c.Detail = "time +"+ms, "now "+at
		}
	case consumerharness.KindDeliver, consumerharness.KindRedeliver:
		c.Label, c.Detail, c.Class = "deliver "+e.Event+" → "+e.Worker, parenthesised(text), "deliver"
		if e.Kind == consumerharness.KindRedeliver {
			c.Label = "redeliver " + e.Event + " → " + e.Worker
		}
	case consumerharness.KindSQL:
		c.Label, c.Detail = e.Op, strings.TrimSpace(strings.TrimPrefix(text, e.Op))
		if e.Result != "" {
			// What the statement returned heads the chip: the value the
			// handler went on with.
			c.Label += " → " + e.Result
			c.Detail = strings.TrimSuffix(c.Detail, " -> "+e.Result)
		}
		switch e.Op {
		case "commit":
			c.Class = "commit"
		case "rollback":
			c.Class = "step muted"
		}
	case consumerharness.KindPoint:
		c.Label, c.Detail = "point", strings.TrimPrefix(text, "call ")
	case consumerharness.KindInjected:
		c.Label, c.Detail, c.Class = "injected failure", strings.TrimSuffix(text, " -> injected failure"), "fault"
	case consumerharness.KindAck:
		c.Label, c.Class = "ack "+e.Event, "ack"
	case consumerharness.KindNack:
		c.Label, c.Class = "nack "+e.Event, "warn"
		_, c.Detail, _ = strings.Cut(text, ": ")
	case consumerharness.KindDeadLetter:
		c.Label, c.Class = "dead-letter "+e.Event+" (poison)", "dlq"
		_, c.Detail, _ = strings.Cut(text, ": ")
	case consumerharness.KindCrash:
		c.Label, c.Detail, c.Class = "✖ CRASH", strings.TrimPrefix(text, "crashes "), "crash"
	case consumerharness.KindLockWait:
		c.Label, c.Detail, c.Class = "waits for a lock", "at "+lockAt(text), "warn"
	case consumerharness.KindLockAcquired:
		c.Label, c.Detail = "gets the lock", "at "+lockAt(text)
	case consumerharness.KindLockGiveUp:
		c.Label, c.Detail, c.Class = "gives up waiting (lock timeout)", strings.TrimPrefix(text, "gives up waiting "), "warn"
	case consumerharness.KindIdle:
		c.Label, c.Class = "nothing to receive", "step muted"
	}
	return e.Lane, c
}

// parenthesised is what a line says in its last parentheses.
func parenthesised(s string) string {
	i := strings.LastIndex(s, " (")
	if i < 0 || !strings.HasSuffix(s, ")") {
		return ""
	}
	return s[i+2 : len(s)-1]
}

// lockAt is the call a lock line names.
func lockAt(s string) string {
	_, at, _ := strings.Cut(s, " at ")
	return at
}

// quoteShort quotes s cut to 60 characters, never inside one.
func quoteShort(s string) string {
	if r := []rune(s); len(r) > 60 {
		s = string(r[:57]) + "..."
	}
	return strconv.Quote(s)
}

// consumerHeadline says whether the consumer broke a law.
func consumerHeadline(r *Run) (string, bool) {
	var broken []string
	for _, l := range r.Consumer.Laws {
		if l.Status == "violated" {
			broken = append(broken, l.Law)
		}
	}
	if len(broken) > 0 {
		return fmt.Sprintf("consumer %s breaks %s", r.Consumer.Consumer, strings.Join(broken, ", ")), true
	}
	if r.Checks == 0 && r.Mode == "consumer" {
		return fmt.Sprintf("consumer %s: inconclusive: no scenario was played, nothing was proven", r.Consumer.Consumer), false
	}
	return fmt.Sprintf("consumer %s: no law broken in %d scenario(s)", r.Consumer.Consumer, r.Checks), false
}
