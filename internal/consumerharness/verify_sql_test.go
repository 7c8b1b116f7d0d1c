package consumerharness

import (
	"database/sql/driver"
	"strings"
	"testing"

	"github.com/idemcheck/idemcheck/internal/consumerharness/backend"
	"github.com/idemcheck/idemcheck/internal/consumerharness/sqlhook"
)

func args(vs ...any) []driver.NamedValue {
	out := make([]driver.NamedValue, len(vs))
	for i, v := range vs {
		out[i] = driver.NamedValue{Ordinal: i + 1, Value: v}
	}
	return out
}

// TestStatementFootprints: what a statement touches, read from its text:
// its tables, read or written, and its rows where a WHERE or a VALUES of
// equalities tells them; anything not understood touches everything.
func TestStatementFootprints(t *testing.T) {
	tables := map[string]bool{"ledger": true, "processed_events": true, "accounts": true}
	for _, tc := range []struct {
		sql  string
		args []driver.NamedValue
		want string
	}{
		{`SELECT count(*) FROM processed_events WHERE event_id = $1`, args("e1"), "r:processed_events[event_id=s:e1]"},
		{`SELECT 1 FROM processed_events p WHERE p.event_id = ? AND done = 1`, args("E1 "), "r:processed_events[event_id=s:e1,done=i:1]"},
		{`select * from "Ledger" where event_id = 'e2' or user_id = ?`, args("u1"), "r:ledger"},
		{`SELECT l.amount_cents FROM ledger l JOIN accounts a ON a.user_id = l.user_id WHERE l.event_id = ?`, args("e1"), "r:accounts r:ledger"},
		{`SELECT event_id FROM processed_events WHERE event_id IN (SELECT event_id FROM ledger)`, nil, "r:ledger r:processed_events"},
		{`SELECT balance_cents FROM accounts WHERE user_id = $1 FOR UPDATE`, args("u1"), "w:accounts[user_id=s:u1]"},
		{`INSERT INTO ledger (event_id, user_id, amount_cents) VALUES ($1, $2, $3)`, args("e1", "u1", int64(100)), "w:ledger[event_id=s:e1,user_id=s:u1,amount_cents=i:100]"},
		{`INSERT INTO processed_events (event_id) VALUES ($1) ON CONFLICT DO NOTHING`, args("e1"), "w:processed_events[event_id=s:e1]"},
		{`INSERT INTO accounts (user_id, balance_cents) VALUES (?, ?) ON CONFLICT (user_id) DO UPDATE SET balance_cents = balance_cents + excluded.balance_cents`, args("u1", int64(5)), "w:accounts"},
		{`INSERT OR REPLACE INTO processed_events VALUES (?)`, args("e1"), "w:processed_events"},
		{`INSERT INTO ledger VALUES (?, ?), (?, ?)`, args("e1", 1, "e2", 2), "w:ledger"},
		{`INSERT INTO ledger (event_id) SELECT event_id FROM processed_events`, nil, "w:ledger r:processed_events"},
		{`UPDATE accounts SET balance_cents = balance_cents + $1 WHERE user_id = $2`, args(int64(100), "u1"), "w:accounts[user_id=s:u1]"},
		{`UPDATE accounts SET user_id = 'u9' WHERE user_id = $1`, args("u1"), "w:accounts"},
		{`DELETE FROM processed_events WHERE event_id = ?`, args("e1"), "w:processed_events[event_id=s:e1]"},
		{`SELECT * FROM audit`, nil, "everything"},                                  // not a table of the schema (a view, a temporary table)
		{`WITH x AS (SELECT 1) SELECT * FROM x`, nil, "everything"},                 // not read
		{`SELECT 1; DELETE FROM ledger`, nil, "everything"},                         // two statements
		{`CREATE TEMP TABLE t (x)`, nil, "everything"},                              // not read
		{`SELECT extract(epoch FROM now())`, nil, "everything"},                     // FROM a function
		{`SELECT * FROM ledger WHERE note = 'it''s'`, nil, "r:ledger[note=s:it's]"}, // a quote in a string
	} {
		sh := statementFootprint(tc.sql, tc.args, tables)
		got := "everything"
		if !sh.all {
			got = footprint{acc: sh.acc}.String()
		}
		if got != tc.want {
			t.Errorf("%s\n got %s\nwant %s", tc.sql, got, tc.want)
		}
	}
}

// TestFootprintsConflict: reads commute with reads; a read and a write of
// one table commute only on rows that cannot be the same; two writes of
// one table never do; touching everything conflicts with anything.
func TestFootprintsConflict(t *testing.T) {
	tables := map[string]bool{"ledger": true, "processed_events": true}
	fp := func(q string, a ...any) footprint {
		return footprint{acc: statementFootprint(q, args(a...), tables).acc}
	}
	readE1 := fp(`SELECT 1 FROM processed_events WHERE event_id = ?`, "e1")
	readE2 := fp(`SELECT 1 FROM processed_events WHERE event_id = ?`, "e2")
	writeE1 := fp(`INSERT INTO processed_events (event_id) VALUES (?)`, "e1")
	writeE2 := fp(`INSERT INTO processed_events (event_id) VALUES (?)`, "e2")
	readAll := fp(`SELECT count(*) FROM processed_events`)
	ledger := fp(`INSERT INTO ledger (event_id) VALUES (?)`, "e1")
	number := fp(`SELECT 1 FROM processed_events WHERE event_id = ?`, int64(1))
	for _, tc := range []struct {
		a, b footprint
		want bool
		why  string
	}{
		{readE1, readE2, false, "two reads"},
		{readE1, writeE2, false, "a read and a write of different rows"},
		{readE1, writeE1, true, "a read and a write of the same row"},
		{readAll, writeE2, true, "a read of every row"},
		{writeE1, writeE2, true, "two writes of one table"},
		{writeE1, ledger, false, "writes of different tables"},
		{number, writeE1, true, "values of different types may compare equal"},
		{footprint{ws: resLock}, footprint{rs: resLock}, true, "SQLite's lock"},
		{footprint{rs: resLock}, footprint{rs: resLock}, false, "two shared locks"},
		{footprint{ws: own(0)}, footprint{ws: own(1)}, false, "two workers' own state"},
		{footprint{ws: msgBit(0)}, footprint{ws: resBroker}, true, "a message and the whole broker"},
		{footprint{ws: resDB}, ledger, true, "everything in the database"},
		{footprint{all: true}, footprint{}, true, "everything"},
	} {
		if got := conflicts(tc.a, tc.b); got != tc.want || conflicts(tc.b, tc.a) != tc.want {
			t.Errorf("%s: conflicts(%s, %s) = %t, want %t", tc.why, tc.a, tc.b, got, tc.want)
		}
	}
}

func TestTokenizeRefusesWhatItCannotRead(t *testing.T) {
	for _, q := range []string{`SELECT 'unclosed`, `SELECT /* unclosed`, `SELECT "unclosed`} {
		if sh := statementFootprint(q, nil, map[string]bool{}); !sh.all {
			t.Errorf("%s: read as %+v", q, sh)
		}
	}
	if !strings.Contains(footprint{all: true}.String(), "everything") {
		t.Error("footprint String")
	}
}

func TestVerbReadsTheMainStatement(t *testing.T) {
	for q, want := range map[string]string{
		"INSERT INTO t VALUES (1)":                              "insert",
		"  replace into t values (1)":                           "insert",
		"WITH x AS (SELECT 1) INSERT INTO t SELECT * FROM x":    "insert",
		"WITH x AS (DELETE FROM t RETURNING *) SELECT * FROM x": "select",
		"CREATE TABLE IF NOT EXISTS t (x INT)":                  "create",
		"/* c */ UPDATE t SET x = 1":                            "update",
		"PRAGMA busy_timeout = 5":                               "pragma",
	} {
		if got := verb(q); got != want {
			t.Errorf("verb(%q) = %q, want %q", q, got, want)
		}
	}
	if changes("CREATE TABLE IF NOT EXISTS t (x INT)") || !changes("DELETE FROM t") {
		t.Error("changes: only INSERT, UPDATE and DELETE set rows affected")
	}
}

// TestBeginTouchesTheLockUnlessDeferred: on SQLite a DEFERRED BEGIN (the
// default) takes no lock and commutes with every other worker's call; one
// that begins IMMEDIATE or EXCLUSIVE takes the write lock at once, and
// its footprint must say so, or the sleep sets would drop the order in
// which another worker's write meets that lock. Backends that do not say
// how they begin keep the lock.
func TestBeginTouchesTheLockUnlessDeferred(t *testing.T) {
	for _, tc := range []struct {
		be   backend.Backend
		want bool
	}{
		{backend.SQLiteReuse{}, true},
		{backend.SQLiteReuse{Params: "_txlock=deferred"}, true},
		{backend.SQLite{Params: "_pragma=busy_timeout(5000)"}, true},
		{backend.SQLiteReuse{Params: "_txlock=immediate"}, false},
		{backend.SQLite{Params: "_pragma=journal_mode(WAL)&_txlock=exclusive"}, false},
		{backend.SQLiteReuse{Params: "_txlock=sometimes"}, false},
		{backend.Postgres{}, false},
	} {
		free := beginTakesNoLock(tc.be)
		if free != tc.want {
			t.Errorf("%T %+v: BEGIN takes no lock = %t, want %t", tc.be, tc.be, free, tc.want)
		}
		v := &verifyRun{s: &walker{searcher: &searcher{sqlite: true, lockFreeBegin: free}}, ws: make([]wview, 1)}
		var fp footprint
		var tr trans
		v.callFootprint(0, sqlhook.Call{Op: sqlhook.Begin, SQL: "BEGIN"}, &fp, &tr)
		if locks := fp.ws&resLock != 0; locks == free {
			t.Errorf("%T %+v: BEGIN's footprint %s: touches the lock = %t, want %t", tc.be, tc.be, fp, locks, !free)
		}
	}
}

// TestCrashUndoesOnlyWhatARollbackTakesBack: the crash right after a call
// is left out only where the crash's rollback takes the call back.
func TestCrashUndoesOnlyWhatARollbackTakesBack(t *testing.T) {
	insert := []driver.NamedValue{{Ordinal: 1, Value: "e1"}, {Ordinal: 2, Value: int64(100)}}
	for _, tc := range []struct {
		sqlite bool
		call   sqlhook.Call
		want   bool
	}{
		{true, sqlhook.Call{Op: sqlhook.Begin, SQL: "BEGIN"}, true},
		{true, sqlhook.Call{Op: sqlhook.Rollback, InTx: true}, true},
		{true, sqlhook.Call{Op: sqlhook.Commit, InTx: true}, false},
		{true, sqlhook.Call{Op: sqlhook.RowsEnd, InTx: true}, true},
		{true, sqlhook.Call{Op: sqlhook.Query, SQL: "SELECT 1 FROM processed_events WHERE event_id = ?", Args: insert[:1]}, true},
		{true, sqlhook.Call{Op: sqlhook.Exec, SQL: "INSERT INTO ledger VALUES (?, ?)", Args: insert, InTx: true}, true},
		{true, sqlhook.Call{Op: sqlhook.Exec, SQL: "INSERT INTO ledger VALUES (?, ?)", Args: insert}, false},
		{true, sqlhook.Call{Op: sqlhook.Query, SQL: "INSERT INTO ledger VALUES (?, ?) RETURNING event_id", Args: insert}, false},
		{true, sqlhook.Call{Op: sqlhook.Exec, SQL: "COMMIT", InTx: true}, false},
		{true, sqlhook.Call{Op: sqlhook.Exec, SQL: "INSERT INTO ledger VALUES (?, ?); COMMIT", Args: insert, InTx: true}, false},
		{true, sqlhook.Call{Op: sqlhook.Exec, SQL: "INSERT INTO audit VALUES (?, ?)", Args: insert, InTx: true}, false},
		{false, sqlhook.Call{Op: sqlhook.Exec, SQL: "INSERT INTO ledger VALUES (?, ?)", Args: insert, InTx: true}, false},
		{false, sqlhook.Call{Op: sqlhook.Query, SQL: "SELECT 1 FROM processed_events WHERE event_id = ?", Args: insert[:1]}, false},
		{false, sqlhook.Call{Op: sqlhook.Begin, SQL: "BEGIN"}, false},
	} {
		w := &walker{searcher: &searcher{sqlite: tc.sqlite, tables: map[string]bool{"ledger": true, "processed_events": true}}}
		v := &verifyRun{s: w, ws: make([]wview, 1)}
		var fp footprint
		var tr trans
		v.callFootprint(0, tc.call, &fp, &tr)
		if tr.undone != tc.want {
			t.Errorf("sqlite %t, %s %q (in a transaction: %t): a crash right after undoes it = %t, want %t", tc.sqlite, tc.call.Op, tc.call.SQL, tc.call.InTx, tr.undone, tc.want)
		}
	}
}
