package consumerharness

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/idemcheck/idemcheck/impl/contract/broker"
	"github.com/idemcheck/idemcheck/internal/hunt"

	"github.com/idemcheck/idemcheck/impl/contract/handler"
)

const ledgerSchema = `
CREATE TABLE ledger (event_id TEXT NOT NULL, amount_cents INTEGER NOT NULL);
CREATE TABLE processed_events (event_id TEXT PRIMARY KEY);`

// adr is the ADR pattern: check, effect and mark in one transaction.
func adr(ctx context.Context, db *sql.DB, m handler.Message) error {
	if m.Event.AmountCents <= 0 {
		return handler.Poison(errors.New("bad amount"))
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	var n int
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM processed_events WHERE event_id = ?`, m.EventID).Scan(&n); err != nil || n > 0 {
		return err
	}
	handler.Point(ctx, "audit "+m.EventID)
	if _, err := tx.ExecContext(ctx, `INSERT INTO ledger VALUES (?, ?)`, m.EventID, m.Event.AmountCents); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO processed_events VALUES (?)`, m.EventID); err != nil {
		return err
	}
	return tx.Commit()
}

func adrConsumer() Consumer {
	return Consumer{Name: "adr", Schema: ledgerSchema, Handler: adr,
		Effects: PerEvent("SELECT event_id, amount_cents FROM ledger"), Dedupe: "SELECT event_id FROM processed_events"}
}

// busy is a scenario that reaches crashes, lock waits, an injected
// failure, a duplicate, time and a replay.
var busy = &Scenario{Version: 1, Workers: 2, Policy: DefaultPolicy,
	Events: []Event{{ID: "e1", User: "u1", Amount: 100}, {ID: "e2", User: "u2", Amount: 200}, {ID: "e3", User: "u1", Poison: true}},
	Steps: []Step{{Op: OpDuplicate, Pick: 0}, {Op: OpRun, Worker: 1}, {Op: OpRun, Worker: 2, Pick: 2}, {Op: OpRun, Worker: 1},
		{Op: OpRun, Worker: 2}, {Op: OpFail, Worker: 1}, {Op: OpRun, Worker: 2}, {Op: OpCrash, Worker: 1}, {Op: OpAdvance, Ms: 6000},
		{Op: OpReplay}, {Op: OpRun, Worker: 1}, {Op: OpRun, Worker: 1}, {Op: OpCrash, Worker: 2}}}

func TestSameScenarioSameTrace(t *testing.T) {
	first, err := Replay(adrConsumer(), busy, immediate)
	if err != nil {
		t.Fatal(err)
	}
	if first.Failed {
		t.Fatalf("the ADR consumer was flagged:\n%s", first.Report())
	}
	trace := first.Outcome.Trace.String()
	for _, want := range []string{"crashes at", "waits for a lock", "injected failure", "call audit", "duplicates", "replays", "dead-letters e3"} {
		if !strings.Contains(trace, want) {
			t.Errorf("the trace never shows %q:\n%s", want, trace)
		}
	}
	for range 3 {
		again, err := Replay(adrConsumer(), busy, immediate)
		if err != nil {
			t.Fatal(err)
		}
		if got := again.Outcome.Trace.String(); got != trace {
			t.Fatalf("the same scenario gave another trace:\n%s\nthen:\n%s", trace, got)
		}
	}
}

func TestDrawnScenariosReplayByteForByte(t *testing.T) {
	hunt.Check(t, func(rt *rapid.T) {
		s := Generator(12).Draw(rt, "scenario")
		a, err := Replay(adrConsumer(), s)
		if err != nil {
			rt.Fatal(err)
		}
		b, err := Replay(adrConsumer(), s)
		if err != nil {
			rt.Fatal(err)
		}
		if a.Outcome.Trace.String() != b.Outcome.Trace.String() {
			rt.Fatalf("two plays of one scenario differ:\n%s\nthen:\n%s", a.Outcome.Trace, b.Outcome.Trace)
		}
		if a.Failed {
			rt.Fatalf("ADR flagged:\n%s", a.Report())
		}
	})
}

func TestScenarioJSONRoundTrips(t *testing.T) {
	js, err := busy.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	back, err := UnmarshalScenario(js)
	if err != nil {
		t.Fatal(err)
	}
	js2, _ := back.Marshal()
	if string(js) != string(js2) {
		t.Fatalf("round trip changed the scenario:\n%s\n%s", js, js2)
	}
	if _, err := UnmarshalScenario([]byte(`{"version": 1, "workers": 0}`)); err == nil || !strings.Contains(err.Error(), "workers 0") {
		t.Fatalf("a scenario with no worker was accepted: %v", err)
	}
}

func TestBadInputIsAClearError(t *testing.T) {
	cases := map[string]struct {
		c    Consumer
		want string
	}{
		"schema":  {Consumer{Schema: "CREATE TABLE ledger (", Handler: adr, Effects: PerEvent("SELECT 1")}, "the schema failed"},
		"effects": {Consumer{Schema: ledgerSchema, Handler: adr, Effects: PerEvent("SELECT nope FROM ledger")}, "the effects query"},
		"dedupe":  {Consumer{Schema: ledgerSchema, Handler: adr, Effects: PerEvent("SELECT event_id FROM ledger"), Dedupe: "SELECT x FROM nowhere"}, "the dedupe query"},
		"shape":   {Consumer{Schema: ledgerSchema + "CREATE TABLE a (u TEXT); INSERT INTO a VALUES ('u1');", Handler: adr, Effects: Aggregate("SELECT u FROM a")}, "must return (user id, total cents)"},
		"handler": {Consumer{Schema: ledgerSchema, Effects: PerEvent("SELECT event_id FROM ledger")}, "give a Handler or a Worker"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := Hunt(tc.c, Checks(5))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

func lawOf(t *testing.T, c Consumer, s *Scenario) Result {
	t.Helper()
	res, err := Replay(c, s)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

var one = &Scenario{Version: 1, Workers: 1, Policy: DefaultPolicy, Events: []Event{{ID: "e1", User: "u1", Amount: 100}}}

func TestAPanickingHandlerIsReported(t *testing.T) {
	c := adrConsumer()
	c.Handler = func(context.Context, *sql.DB, handler.Message) error { panic("boom") }
	res := lawOf(t, c, one)
	if !res.Failed || res.Law != LawRuns || !strings.Contains(strings.Join(res.Breaches[0].Details, "\n"), "panicked handling e1: boom") {
		t.Fatalf("a panic was not reported:\n%s", res.Report())
	}
}

func TestATransactionLeftOpenIsReported(t *testing.T) {
	c := adrConsumer()
	c.Handler = func(ctx context.Context, db *sql.DB, m handler.Message) error {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `INSERT INTO ledger VALUES (?, 1)`, m.EventID)
		return err
	}
	res := lawOf(t, c, one)
	if !res.Failed || res.Law != LawRuns || res.Breaches[0].Summary != "handler-leaks-transaction" {
		t.Fatalf("a leaked transaction was not reported:\n%s", res.Report())
	}
	if !strings.Contains(res.Report(), "(last call: exec INSERT INTO ledger VALUES (?, 1) [") {
		t.Errorf("the report does not name the transaction's last call:\n%s", res.Report())
	}
}

func TestAHandlerBlockedOutsideTheDatabaseIsReported(t *testing.T) {
	old := hangAfter
	hangAfter = 100 * time.Millisecond
	defer func() { hangAfter = old }()
	block := make(chan struct{})
	defer close(block)
	c := adrConsumer()
	c.Handler = func(context.Context, *sql.DB, handler.Message) error { <-block; return nil }
	res := lawOf(t, c, one)
	if !res.Failed || res.Law != LawRuns || res.Breaches[0].Summary != "handler-hangs" {
		t.Fatalf("a hang was not reported:\n%s", res.Report())
	}
}

func TestALoopingHandlerIsReported(t *testing.T) {
	c := adrConsumer()
	c.Handler = func(ctx context.Context, db *sql.DB, m handler.Message) error {
		for {
			if _, err := db.ExecContext(ctx, `SELECT 1`); err != nil {
				return err
			}
		}
	}
	res := lawOf(t, c, one)
	if !res.Failed || res.Law != LawRuns || res.Breaches[0].Summary != "quiesces" {
		t.Fatalf("a loop was not reported:\n%s", res.Report())
	}
}

type closer struct{ closed *int }

func (c closer) Close() error { *c.closed++; return nil }

func TestACrashedWorkerRestartsFromItsFactory(t *testing.T) {
	var started []string
	closed := 0
	c := adrConsumer()
	c.Handler = nil
	c.Worker = func(id string, _ *sql.DB) (handler.Func, io.Closer, error) {
		started = append(started, id)
		return adr, closer{&closed}, nil
	}
	s := &Scenario{Version: 1, Workers: 1, Policy: DefaultPolicy, Events: one.Events,
		Steps: []Step{{Op: OpRun, Worker: 1}, {Op: OpRun, Worker: 1}, {Op: OpCrash, Worker: 1}}}
	res := lawOf(t, c, s)
	if res.Failed {
		t.Fatalf("flagged:\n%s", res.Report())
	}
	if strings.Join(started, ",") != "w1#1,w1#2" || closed != 2 {
		t.Fatalf("workers started %v, closed %d times; want w1#1,w1#2 and 2 (the crash, the end)", started, closed)
	}
}

func TestACrashRollsBackTheOpenTransaction(t *testing.T) {
	// Crash w1 at its commit: its inserts must be gone, and its
	// redelivery applies the event once.
	s := &Scenario{Version: 1, Workers: 1, Policy: DefaultPolicy, Events: one.Events,
		Steps: []Step{{Op: OpRun, Worker: 1}, {Op: OpRun, Worker: 1}, {Op: OpRun, Worker: 1}, {Op: OpRun, Worker: 1},
			{Op: OpRun, Worker: 1}, {Op: OpRun, Worker: 1}, {Op: OpRun, Worker: 1}, {Op: OpCrash, Worker: 1}}}
	res := lawOf(t, adrConsumer(), s)
	if res.Failed {
		t.Fatalf("flagged:\n%s", res.Report())
	}
	trace := res.Outcome.Trace.String()
	if !strings.Contains(trace, "crashes at commit") || !strings.Contains(trace, "attempt 2") {
		t.Fatalf("want a crash at commit and a redelivery:\n%s", trace)
	}
	if len(res.Outcome.Quiet.Rows) != 1 {
		t.Fatalf("effects once quiet: %v, want one row", res.Outcome.Quiet.Rows)
	}
}

// clockSeer is the ADR consumer noting the time its handler sees.
func clockSeer(seen *[]string) Consumer {
	c := adrConsumer()
	c.Handler = func(ctx context.Context, db *sql.DB, m handler.Message) error {
		now := time.Now()
		*seen = append(*seen, fmt.Sprintf("%s %s %d", m.EventID, now.UTC().Format(time.RFC3339Nano), now.UnixMilli()-m.Event.OccurredAtMs))
		return adr(ctx, db, m)
	}
	return c
}

var twoEventsOneSecondApart = &Scenario{Version: 1, Workers: 1, Policy: DefaultPolicy, Events: []Event{{ID: "e1", User: "u1", Amount: 100}, {ID: "e2", User: "u1", Amount: 200}},
	Steps: []Step{{Op: OpRun, Worker: 1}, {Op: OpAdvance, Ms: 1000}, {Op: OpRun, Worker: 1}}}

// TestTheHandlersClockIsTheScenarios in every entry point: Check (its
// replay of a file), Replay, and Hunt.
func TestTheHandlersClockIsTheScenarios(t *testing.T) {
	var seen []string
	c := clockSeer(&seen)
	s := twoEventsOneSecondApart
	want := func(how string) {
		t.Helper()
		got := strings.Join(seen, "\n")
		if !strings.HasPrefix(got, "e1 2000-01-01T00:00:00Z 0\n") || !strings.Contains(got, "e2 2000-01-01T00:00:01Z 1000") {
			t.Fatalf("%s: the handler's clock is not the scenario's:\n%s", how, got)
		}
	}
	var runs []string
	for range 2 {
		seen = nil
		res, err := Replay(c, s)
		if err != nil || res.Failed || len(res.MachineClock) > 0 {
			t.Fatalf("%v\n%s", err, res.Report())
		}
		want("Replay")
		runs = append(runs, strings.Join(seen, "\n"))
	}
	if runs[0] != runs[1] {
		t.Fatalf("two plays saw different clocks:\n%s\nthen:\n%s", runs[0], runs[1])
	}
	path, err := SaveScenario(t.TempDir(), "adr", LawSingleCredit, "a saved case", s, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	seen = nil
	t.Setenv(ReplayEnv, path)
	Check(t, c)
	want("Check")
	t.Setenv(ReplayEnv, "")

	// Hunt: every drawn scenario starts at the scenario's time zero.
	seen = nil
	res, err := Hunt(c, Checks(20), Seed(3))
	if err != nil || res.Failed || len(res.MachineClock) > 0 {
		t.Fatalf("%v\n%s", err, res.Report())
	}
	for _, l := range seen {
		if !strings.Contains(l, " 2000-01-01T") {
			t.Fatalf("Hunt: the handler saw %s", l)
		}
	}
}

// TestWithoutABubbleTheReportSaysTheClockIsTheMachines: when no bubble
// can be had, the scenario plays on the machine's clock and says so.
func TestWithoutABubbleTheReportSaysTheClockIsTheMachines(t *testing.T) {
	var seen []string
	cfg := newConfig(nil)
	cfg.noBubble = true
	res, err := replay(clockSeer(&seen), twoEventsOneSecondApart, cfg)
	if err != nil || res.Failed {
		t.Fatalf("%v\n%s", err, res.Report())
	}
	if strings.Contains(seen[0], "2000-01-01") || len(res.MachineClock) != 1 || !strings.Contains(res.Report(), "NOTE: read the machine's clock") ||
		!strings.Contains(res.MachineClock[0], "time.Now") {
		t.Fatalf("saw %v; report:\n%s", seen, res.Report())
	}
}

func TestAWorkerThatFailsToStartIsReported(t *testing.T) {
	starts := 0
	c := adrConsumer()
	c.Handler = nil
	c.Worker = func(string, *sql.DB) (handler.Func, io.Closer, error) {
		if starts++; starts > 1 {
			return nil, nil, errors.New("no connection to the cache")
		}
		return adr, nil, nil
	}
	s := &Scenario{Version: 1, Workers: 1, Policy: DefaultPolicy, Events: one.Events, Steps: []Step{{Op: OpCrash, Worker: 1}}}
	res := lawOf(t, c, s)
	if !res.Failed || res.Law != LawRuns || !strings.Contains(strings.Join(res.Breaches[0].Details, " "), "no connection to the cache") {
		t.Fatalf("a failed restart was not reported:\n%s", res.Report())
	}
	starts = 1
	if _, err := Replay(c, one); err == nil || !strings.Contains(err.Error(), "failed to start") {
		t.Fatalf("a failed first start: %v", err)
	}
}

// leaky starts a goroutine it never waits for, which blocks for good.
func leaky(ctx context.Context, db *sql.DB, m handler.Message) error {
	block := make(chan struct{})
	go func() { <-block }()
	return adr(ctx, db, m)
}

func TestGoroutinesLeftRunningAreReported(t *testing.T) {
	c := adrConsumer()
	c.Handler = leaky
	// Outside a bubble the check looks only past a slack of goroutines:
	// six events, each delivered twice, leave twelve.
	six := &Scenario{Version: 1, Workers: 2, Policy: DefaultPolicy}
	for i := range 6 {
		six.Events = append(six.Events, Event{ID: fmt.Sprintf("e%d", i+1), User: "u1", Amount: 100})
	}
	for _, bubble := range []bool{false, true} {
		cfg := newConfig(nil)
		s := six
		if bubble {
			s = one
		} else {
			cfg.noBubble = true
		}
		res, err := replay(c, s, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if !res.Failed || res.Law != LawRuns || res.Breaches[0].Summary != "handler-goroutines" ||
			!strings.Contains(strings.Join(res.Breaches[0].Details, "\n"), "leaky.func1") {
			t.Fatalf("bubble %v: a goroutine left running was not reported:\n%s", bubble, res.Report())
		}
	}
}

// TestEveryLawCanFail breaks each law on a judged outcome: the laws no
// example consumer can break (the broker's own) are shown failing here.
func TestEveryLawCanFail(t *testing.T) {
	c := adrConsumer()
	s := &Scenario{Version: 1, Workers: 1, Policy: DefaultPolicy, Events: []Event{{ID: "e1", User: "u1", Amount: 100}, {ID: "e2", User: "u1", Amount: 200}}}
	row := func(id string) []string { return []string{id, "100"} }
	good := Snapshot{Rows: [][]string{row("e1"), row("e2")}, Dedupe: []string{"e1", "e2"}}
	cases := map[string]*Outcome{
		LawSingleCredit: {Quiet: Snapshot{Rows: [][]string{row("e1"), row("e1"), row("e2")}, Dedupe: good.Dedupe}, Replayed: good},
		LawNothingLost:  {Quiet: Snapshot{Rows: [][]string{row("e1")}, Dedupe: []string{"e1"}}, Replayed: good},
		LawAtomicity:    {Quiet: Snapshot{Rows: good.Rows, Dedupe: []string{"e1"}}, Replayed: good},
		LawReplay:       {Quiet: good, Replayed: Snapshot{Rows: [][]string{row("e1"), {"e2", "999"}}, Dedupe: good.Dedupe}},
		LawBoundedAttempts: {Quiet: good, Replayed: good, DLQ: []broker.DLQEntry{{Topic: Topic, Offset: 0, Attempts: 2, Key: "e1"}},
			Messages: []broker.MessageState{{Message: broker.Message{Key: "e2", Attempts: 9}}}},
	}
	for law, o := range cases {
		o.Scenario, o.Trace = s, &Trace{}
		bs := Judge(c, o)
		found := false
		for _, b := range bs {
			found = found || b.Law == law
		}
		if !found {
			t.Errorf("%s: not broken by its outcome; breaches %+v", law, bs)
		}
	}
	o := &Outcome{Scenario: s, Trace: &Trace{}, Quiet: good, Replayed: good}
	if bs := Judge(c, o); len(bs) != 0 {
		t.Fatalf("a clean outcome is flagged: %+v", bs)
	}
	agg := Consumer{Effects: Aggregate("q"), Dedupe: "d"}
	base := Snapshot{Rows: [][]string{{"u1", "50"}}}
	total := func(n string) Snapshot { return Snapshot{Rows: [][]string{{"u1", n}}, Dedupe: []string{"e1", "e2"}} }
	for want, o := range map[string]*Outcome{
		"":              {Base: base, Quiet: total("350"), Replayed: total("350")},
		LawSingleCredit: {Base: base, Quiet: total("450"), Replayed: total("450")},
		LawNothingLost:  {Base: base, Quiet: total("250"), Replayed: total("250")},
		LawReplay:       {Base: base, Quiet: total("350"), Replayed: total("360")},
	} {
		o.Scenario, o.Trace = s, &Trace{}
		bs := Judge(agg, o)
		if (want == "") != (len(bs) == 0) || (want != "" && !slices.ContainsFunc(bs, func(b Breach) bool { return b.Law == want })) {
			t.Errorf("aggregate, want %q broken: got %+v", want, bs)
		}
	}
}

// TestTheGeneratorReachesEverySituation: a campaign over the ADR consumer
// reaches every named situation, or its passes would prove little.
func TestTheGeneratorReachesEverySituation(t *testing.T) {
	res, err := Hunt(adrConsumer(), Checks(1000), Seed(7))
	if err != nil || res.Failed {
		t.Fatalf("%v\n%s", err, res.Report())
	}
	for _, s := range Situations {
		if res.Coverage[s] == 0 {
			t.Errorf("never reached in 1000 scenarios: %s", s)
		}
	}
	t.Logf("coverage: %v", res.Coverage)
}

func TestCheckReplaysTheFileTheEnvironmentNames(t *testing.T) {
	path, err := SaveScenario(t.TempDir(), "adr", LawSingleCredit, "a saved case", busy, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	back, err := LoadScenario(path)
	if err != nil {
		t.Fatal(err)
	}
	if a, b := mustJSON(t, back), mustJSON(t, busy); a != b {
		t.Fatalf("saved and loaded scenarios differ:\n%s\n%s", a, b)
	}
	t.Setenv(ReplayEnv, path)
	Check(t, adrConsumer()) // the ADR consumer passes it
}

func mustJSON(t *testing.T, s *Scenario) string {
	t.Helper()
	b, err := s.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
