package consumerharness

import (
	"context"
	"database/sql"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/impl/contract/handler"
)

// A consumer that writes down every clock of the database, through each
// construct the harness points at the scenario's: column defaults and
// expressions in statements, on SQLite.
const sqliteClockSchema = `
CREATE TABLE seen (
	event_id TEXT PRIMARY KEY,
	at1 TEXT DEFAULT CURRENT_TIMESTAMP,
	at2 TEXT DEFAULT (datetime('now')),
	day TEXT DEFAULT CURRENT_DATE,
	clock TEXT DEFAULT (current_time),
	expr TEXT
);`

func sqliteClock(ctx context.Context, db *sql.DB, m handler.Message) error {
	if m.Event.AmountCents <= 0 {
		return handler.Poison(errors.New("bad amount"))
	}
	_, err := db.ExecContext(ctx, `INSERT INTO seen (event_id, expr) VALUES ($1,
		datetime() || ' ' || strftime('%s', 'now') || ' ' || unixepoch() || ' ' || round((julianday('now') - 2451544.5) * 86400, 3) || ' ' || date('now', '+1 day'))
		ON CONFLICT DO NOTHING`, m.EventID)
	return err
}

// oneMinuteApart plays e1 at the scenario's start and e2 a minute later.
var oneMinuteApart = &Scenario{Version: 1, Workers: 1, Policy: DefaultPolicy, Events: []Event{{ID: "e1", User: "u1", Amount: 100}, {ID: "e2", User: "u1", Amount: 200}},
	Steps: []Step{{Op: OpRun, Worker: 1}, {Op: OpRun, Worker: 1}, {Op: OpRun, Worker: 1}, {Op: OpAdvance, Ms: 60000}}}

func TestTheSQLiteClockIsTheScenarios(t *testing.T) {
	c := Consumer{Name: "sqlite-clock", Schema: sqliteClockSchema, Handler: sqliteClock,
		Effects: PerEvent("SELECT event_id, at1, at2, day, clock, expr, CURRENT_TIMESTAMP FROM seen")}
	var traces []string
	for range 2 {
		res, err := Replay(c, oneMinuteApart)
		if err != nil || res.Failed || len(res.MachineClock) > 0 {
			t.Fatalf("%v\n%s", err, res.Report())
		}
		rows := res.Outcome.Quiet.Rows
		want := [][]string{
			{"e1", "2000-01-01 00:00:00", "2000-01-01 00:00:00", "2000-01-01", "00:00:00", "2000-01-01 00:00:00 946684800 946684800 0.0 2000-01-02", "2000-01-01 00:01:00"},
			{"e2", "2000-01-01 00:01:00", "2000-01-01 00:01:00", "2000-01-01", "00:01:00", "2000-01-01 00:01:00 946684860 946684860 60.0 2000-01-02", "2000-01-01 00:01:00"},
		}
		if !slices.EqualFunc(rows, want, slices.Equal) {
			t.Fatalf("the database's clock:\n got %q\nwant %q", rows, want)
		}
		traces = append(traces, res.Outcome.Trace.String())
		if res.Elapsed >= time.Minute {
			t.Fatalf("Elapsed %v: the scenario's minute, not the machine's time", res.Elapsed)
		}
	}
	if traces[0] != traces[1] {
		t.Fatalf("two plays differ:\n%s\n%s", traces[0], traces[1])
	}
}

func TestWhatStaysOnTheMachinesClockIsNamed(t *testing.T) {
	c := Consumer{Name: "sqlite-param-now", Schema: `CREATE TABLE seen (event_id TEXT PRIMARY KEY, at TEXT)`,
		Handler: func(ctx context.Context, db *sql.DB, m handler.Message) error {
			_, err := db.ExecContext(ctx, `INSERT INTO seen VALUES ($1, datetime($2)) ON CONFLICT DO NOTHING`, m.EventID, "now")
			return err
		},
		Effects: PerEvent("SELECT event_id FROM seen")}
	res, err := Replay(c, one)
	if err != nil {
		t.Fatal(err)
	}
	rep := res.Report()
	if len(res.MachineClock) != 1 || !strings.Contains(rep, "NOTE: read the machine's clock") || !strings.Contains(rep, "a parameter 'now'") ||
		!strings.Contains(res.Outcome.Trace.String(), "-- machine's clock: a parameter 'now'") {
		t.Fatalf("the 'now' parameter is not named:\n%s", rep)
	}
}

const pgClockSchema = `
CREATE TABLE seen (
	event_id TEXT PRIMARY KEY,
	at1 TIMESTAMPTZ DEFAULT now(),
	at2 TIMESTAMPTZ DEFAULT CURRENT_TIMESTAMP,
	at3 TIMESTAMP DEFAULT localtimestamp,
	day DATE DEFAULT current_date,
	in_tx TIMESTAMPTZ,
	stmt TIMESTAMPTZ,
	expr TEXT
);`

// pgClock writes down the database's clocks in a transaction that spans
// a move of time: now() stays at the transaction's start, as PostgreSQL
// has it, while statement_timestamp() moves.
func pgClock(ctx context.Context, db *sql.DB, m handler.Message) error {
	if m.Event.AmountCents <= 0 {
		return handler.Poison(errors.New("bad amount"))
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	res, err := tx.ExecContext(ctx, `INSERT INTO seen (event_id) VALUES ($1) ON CONFLICT DO NOTHING`, m.EventID)
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return nil // seen already
	}
	if _, err := tx.ExecContext(ctx, `UPDATE seen SET in_tx = transaction_timestamp(), stmt = statement_timestamp(),
		expr = to_char(clock_timestamp() AT TIME ZONE 'UTC', 'HH24:MI:SS') || ' ' || (current_time(0) AT TIME ZONE 'UTC')::text || ' ' || (now() + INTERVAL '1 day')::date
		WHERE event_id = $1`, m.EventID); err != nil {
		return err
	}
	return tx.Commit()
}

func TestPostgresTheDatabasesClockIsTheScenarios(t *testing.T) {
	c := Consumer{Name: "pg-clock", Schema: pgClockSchema, Handler: pgClock,
		Effects: PerEvent(`SELECT event_id, to_char(at1 AT TIME ZONE 'UTC', 'HH24:MI:SS'), at1 = at2, to_char(at3, 'HH24:MI:SS'), day::text,
			to_char(in_tx AT TIME ZONE 'UTC', 'HH24:MI:SS'), to_char(stmt AT TIME ZONE 'UTC', 'HH24:MI:SS'), expr FROM seen`)}
	// e1: begin and insert at 00:00:00, a minute passes, the update; e2
	// all at 00:01:00.
	s := &Scenario{Version: 1, Workers: 1, Policy: DefaultPolicy, Events: []Event{{ID: "e1", User: "u1", Amount: 100}, {ID: "e2", User: "u1", Amount: 200}},
		Steps: []Step{{Op: OpRun, Worker: 1}, {Op: OpRun, Worker: 1}, {Op: OpRun, Worker: 1}, {Op: OpAdvance, Ms: 60000}}}
	cfg := pgStarted(t)
	res, err := replay(c, s, cfg)
	if err != nil || res.Failed || len(res.MachineClock) > 0 {
		t.Fatalf("%v\n%s", err, res.Report())
	}
	want := [][]string{
		{"e1", "00:00:00", "true", "00:00:00", "2000-01-01", "00:00:00", "00:01:00", "00:01:00 00:00:00+00 2000-01-02"},
		{"e2", "00:01:00", "true", "00:01:00", "2000-01-01", "00:01:00", "00:01:00", "00:01:00 00:01:00+00 2000-01-02"},
	}
	if rows := res.Outcome.Quiet.Rows; !slices.EqualFunc(rows, want, slices.Equal) {
		t.Fatalf("the database's clock:\n got %q\nwant %q\n%s", rows, want, res.Outcome.Trace)
	}
	// What stays on the server's clock is named.
	c.Handler = func(ctx context.Context, db *sql.DB, m handler.Message) error {
		_, err := db.ExecContext(ctx, `INSERT INTO seen (event_id, at1) VALUES ($1, 'now'::timestamptz) ON CONFLICT DO NOTHING`, m.EventID)
		return err
	}
	res, err = replay(c, one, cfg)
	if err != nil || len(res.MachineClock) != 1 || !strings.Contains(res.MachineClock[0], "the literal 'now' cast") {
		t.Fatalf("%v: %q\n%s", err, res.MachineClock, res.Report())
	}
}
