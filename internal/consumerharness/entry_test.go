package consumerharness

import (
	"fmt"
	"strings"
	"testing"

	"github.com/idemcheck/idemcheck/internal/hunt"

	"pgregory.net/rapid"
)

// Every line of a trace is claimed by an actor: the text of each entry is
// the line the numbered trace prints, each kind sits in its lane, and the
// time, step and dead-letter count follow the run.
func TestTraceEntriesSayWhoActed(t *testing.T) {
	res, err := Replay(adrConsumer(), busy, immediate)
	if err != nil {
		t.Fatal(err)
	}
	tr := res.Outcome.Trace
	entries, lines := tr.Entries(), tr.Lines()
	if len(entries) != len(lines) {
		t.Fatalf("%d entries for %d lines", len(entries), len(lines))
	}
	var numbered strings.Builder
	seen := map[EntryKind]bool{}
	lastDLQ, lastStep := 0, 0
	for i, e := range entries {
		fmt.Fprintf(&numbered, "%4d. %s\n", e.Line, e.Text)
		if e.Line != i+1 || e.Text != lines[i] {
			t.Errorf("entry %d is line %d %q, want %q", i, e.Line, e.Text, lines[i])
		}
		seen[e.Kind] = true
		switch e.Kind {
		case KindProduce, KindDuplicate, KindReplay, KindTime:
			if e.Lane != LaneBroker {
				t.Errorf("line %d %q (%s) is in lane %q, want the broker's", e.Line, e.Text, e.Kind, e.Lane)
			}
		case KindDeliver, KindRedeliver:
			if e.Lane != LaneBroker || e.Worker == "" || e.Event == "" || e.Attempt < 1 || !strings.Contains(e.Text, e.Worker+" receives "+e.Event) {
				t.Errorf("delivery line %d %q: %+v", e.Line, e.Text, e)
			}
			if (e.Kind == KindRedeliver) != (e.Attempt > 1) {
				t.Errorf("line %d: kind %s at attempt %d", e.Line, e.Kind, e.Attempt)
			}
		case KindPhase:
			if e.Lane != LaneHarness || !strings.HasPrefix(e.Text, "--") {
				t.Errorf("phase line %d %q in lane %q", e.Line, e.Text, e.Lane)
			}
		case KindNote:
			t.Errorf("line %d %q is claimed by no actor", e.Line, e.Text)
		default:
			if e.Lane != e.Worker || !strings.HasPrefix(e.Text, e.Worker+" ") {
				t.Errorf("worker line %d %q (%s) is in lane %q of worker %q", e.Line, e.Text, e.Kind, e.Lane, e.Worker)
			}
		}
		if e.Kind == KindSQL && (e.Op == "" || !strings.HasPrefix(e.Text, e.Worker+" "+e.Op)) {
			t.Errorf("database line %d %q names op %q", e.Line, e.Text, e.Op)
		}
		if e.DLQ < lastDLQ || e.Step < lastStep && e.Step != 0 {
			t.Errorf("line %d: dead-letter count %d after %d, step %d after %d", e.Line, e.DLQ, lastDLQ, e.Step, lastStep)
		}
		if e.Kind == KindDeadLetter && e.DLQ != lastDLQ+1 {
			t.Errorf("line %d dead-letters %s but the count went %d -> %d", e.Line, e.Event, lastDLQ, e.DLQ)
		}
		lastDLQ, lastStep = e.DLQ, max(e.Step, lastStep)
	}
	if numbered.String() != tr.String() {
		t.Fatalf("the entries do not print as the trace:\n%s\nwant:\n%s", numbered.String(), tr)
	}
	if lastStep != busy.Size() {
		t.Errorf("the last step played is %d, want %d", lastStep, busy.Size())
	}
	for _, k := range []EntryKind{KindProduce, KindDuplicate, KindReplay, KindTime, KindDeliver, KindRedeliver, KindSQL, KindPoint,
		KindInjected, KindAck, KindDeadLetter, KindCrash, KindLockWait, KindLockAcquired, KindPhase} {
		if !seen[k] {
			t.Errorf("the busy scenario has no %s line", k)
		}
	}
}

// No line of a drawn scenario is left to the harness's lane but the
// phases: every line the run writes says whose it is.
func TestDrawnTracesClaimEveryLine(t *testing.T) {
	hunt.Check(t, func(rt *rapid.T) {
		s := Generator(12).Draw(rt, "scenario")
		res, err := Replay(adrConsumer(), s)
		if err != nil {
			rt.Fatal(err)
		}
		for _, e := range res.Outcome.Trace.Entries() {
			if e.Lane == LaneHarness && e.Kind != KindPhase {
				rt.Fatalf("line %d %q (%s) is claimed by no actor", e.Line, e.Text, e.Kind)
			}
		}
	})
}
