package consumerharness

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"slices"
	"strings"
	"testing"

	"github.com/idemcheck/idemcheck/impl/contract/handler"
)

// markOnce checks, applies, then marks with ON CONFLICT DO NOTHING, and
// reads a list it closes early: a trace line shows what each statement
// returned.
func markOnce(ctx context.Context, db *sql.DB, m handler.Message) error {
	var n int
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM processed_events WHERE event_id = ?`, m.EventID).Scan(&n); err != nil || n > 0 {
		return err
	}
	var first string
	err := db.QueryRowContext(ctx, `SELECT event_id FROM ledger ORDER BY event_id`).Scan(&first)
	if err != nil && err != sql.ErrNoRows {
		return err
	}
	if _, err := db.ExecContext(ctx, `INSERT INTO ledger VALUES (?, ?)`, m.EventID, m.Event.AmountCents); err != nil {
		return err
	}
	_, err = db.ExecContext(ctx, `INSERT INTO processed_events VALUES (?) ON CONFLICT DO NOTHING`, m.EventID)
	return err
}

func TestTheTraceShowsWhatEachStatementReturned(t *testing.T) {
	c := Consumer{Name: "markonce", Schema: ledgerSchema, Handler: markOnce,
		Effects: PerEvent("SELECT event_id, amount_cents FROM ledger"), Dedupe: "SELECT event_id FROM processed_events"}
	s := &Scenario{Version: 1, Workers: 2, Policy: DefaultPolicy,
		Events: []Event{{ID: "e1", User: "u1", Amount: 100}, {ID: "e2", User: "u1", Amount: 200}},
		Steps:  []Step{{Op: OpDuplicate, Pick: 0}, {Op: OpRun, Worker: 1}, {Op: OpRun, Worker: 2, Pick: 1}}}
	res, err := Replay(c, s, immediate)
	if err != nil {
		t.Fatal(err)
	}
	trace := res.Outcome.Trace.String()
	for _, want := range []string{
		"SELECT count(*) FROM processed_events WHERE event_id = ? [e1] -> 1 row: (0)",
		"SELECT count(*) FROM processed_events WHERE event_id = ? [e1] -> 1 row: (1)",
		"SELECT event_id FROM ledger ORDER BY event_id -> no rows",
		// QueryRow reads one row: the others are counted, not shown.
		`SELECT event_id FROM ledger ORDER BY event_id -> 2 rows, 1 read: ("e1") (1 more closed unread)`,
		"INSERT INTO ledger VALUES (?, ?) [e1 100] -> 1 row affected",
		"ON CONFLICT DO NOTHING [e1] -> 0 rows affected",
	} {
		if !strings.Contains(trace, want) {
			t.Errorf("the trace never shows %q:\n%s", want, trace)
		}
	}
	if strings.Contains(trace, "rows end SELECT count(*) FROM processed_events WHERE event_id = ? ->") {
		t.Errorf("the end of a query's rows repeats its result:\n%s", trace)
	}
	for range 2 {
		again, err := Replay(c, s, immediate)
		if err != nil {
			t.Fatal(err)
		}
		if got := again.Outcome.Trace.String(); got != trace {
			t.Fatalf("the same scenario gave another trace:\n%s\nthen:\n%s", trace, got)
		}
	}
}

func TestAResultIsCutForAPerson(t *testing.T) {
	cr := &callResult{query: true, closed: true, more: 0, read: 5,
		rows: []string{formatRow([]driver.Value{int64(1), strings.Repeat("x", 50)}), formatRow([]driver.Value{nil, []byte{0, 1}}), formatRow([]driver.Value{1, 2, 3, 4, 5, 6, 7, 8})}}
	want := ` -> 5 rows: (1, "xxxxxxxxxxxxxxxxxxxxxxxxxxxxx..."), (NULL, x'0001'), (1, 2, 3, 4, 5, 6, ... 2 more), ... 2 more`
	if got := cr.String(); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	if got := (&callResult{query: true, more: -1, read: 1, rows: []string{"(0)"}}).String(); got != " -> 1 row read: (0) (the rows were never closed)" {
		t.Errorf("rows never closed: %s", got)
	}
}

// A reduced counterexample is named as the generator would have drawn
// it: the one event left is e1 of u1 with 100 cents, the one worker w1.
func TestAReducedCounterexampleHasCanonicalNames(t *testing.T) {
	noDedupe := Consumer{Name: "nodedupe", Schema: ledgerSchema,
		Handler: func(ctx context.Context, db *sql.DB, m handler.Message) error {
			_, err := db.ExecContext(ctx, `INSERT INTO ledger VALUES (?, ?)`, m.EventID, m.Event.AmountCents)
			return err
		},
		Effects: PerEvent("SELECT event_id, amount_cents FROM ledger")}
	s := &Scenario{Version: 1, Workers: 3, Policy: DefaultPolicy,
		Events: []Event{{ID: "e1", User: "u1", Amount: 100}, {ID: "e2", User: "u1", Amount: 200}, {ID: "e3", User: "u2", Amount: 300}},
		Steps:  []Step{{Op: OpRun, Worker: 3, Pick: 2}, {Op: OpDuplicate, Pick: 2}, {Op: OpRun, Worker: 3}, {Op: OpRun, Worker: 3, Pick: 1}}}
	keep := func(x *Scenario) *Result {
		r, err := Replay(noDedupe, x, immediate)
		if err != nil || !r.Failed || r.Law != LawSingleCredit {
			return nil
		}
		return &r
	}
	if keep(s) == nil {
		t.Fatal("the scenario does not break single-credit")
	}
	red, r := Reduce(s, keep)
	if r == nil {
		t.Fatal("nothing reduced")
	}
	want := []Event{{ID: "e1", User: "u1", Amount: 100}}
	if !slices.Equal(red.Events, want) || red.Workers != 1 {
		t.Fatalf("reduced to %s, want one event %+v and one worker", mustJSON(t, red), want[0])
	}
	for _, st := range red.Steps {
		if st.Worker > 1 {
			t.Fatalf("reduced to %s: a step of w%d", mustJSON(t, red), st.Worker)
		}
	}
	if trace := r.Outcome.Trace.String(); !strings.Contains(trace, "produce e1: user u1, 100 cents") {
		t.Errorf("the report is not the renamed scenario's:\n%s", trace)
	}
}

func TestCanonicalKeepsPayloadsAndHandWrittenNames(t *testing.T) {
	s := &Scenario{Version: 1, Workers: 2, Policy: DefaultPolicy,
		Events: []Event{{ID: "e3", User: "u2", Amount: 300}, {ID: "e4", User: "u2", Amount: 300, Payload: "e3"}, {ID: "refund", User: "alice", Amount: 250}},
		Steps:  []Step{{Op: OpRun, Worker: 2}, {Op: OpCrash, Worker: 1}, {Op: OpDuplicate, Pick: 1}}}
	c := canonical(s, true)
	want := []Event{{ID: "e1", User: "u1", Amount: 100}, {ID: "e2", User: "u1", Amount: 100, Payload: "e1"}, {ID: "refund", User: "alice", Amount: 250}}
	if !slices.Equal(c.Events, want) {
		t.Errorf("events %+v, want %+v", c.Events, want)
	}
	if c.Steps[0].Worker != 1 || c.Steps[1].Worker != 2 || c.Steps[2].Pick != 1 {
		t.Errorf("steps %+v", c.Steps)
	}
	if err := c.Validate(); err != nil {
		t.Error(err)
	}
	if canonical(c, true) != nil {
		t.Error("a canonical scenario is renamed again")
	}
}
