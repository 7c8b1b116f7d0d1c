package sqlclock

import (
	"database/sql/driver"
	"strings"
	"testing"
)

func named(vs ...any) []driver.NamedValue {
	out := make([]driver.NamedValue, len(vs))
	for i, v := range vs {
		out[i] = driver.NamedValue{Ordinal: i + 1, Value: v}
	}
	return out
}

func TestSQLite(t *testing.T) {
	const now = "idemcheck_now(7)"
	for q, want := range map[string]string{
		"INSERT INTO t (at) VALUES (CURRENT_TIMESTAMP)":                                                      "INSERT INTO t (at) VALUES ((datetime(" + now + ")))",
		"CREATE TABLE t (at TEXT DEFAULT CURRENT_TIMESTAMP, d DEFAULT current_date, x DEFAULT Current_Time)": "CREATE TABLE t (at TEXT DEFAULT (datetime(" + now + ")), d DEFAULT (date(" + now + ")), x DEFAULT (time(" + now + ")))",
		"CREATE TABLE t (at TEXT DEFAULT (datetime('now')))":                                                 "CREATE TABLE t (at TEXT DEFAULT (datetime(" + now + ")))",
		"DELETE FROM p WHERE at < datetime('now', '-30 days')":                                               "DELETE FROM p WHERE at < datetime(" + now + ", '-30 days')",
		"SELECT date('NOW'), time( 'now' ), julianday('now'), unixepoch('now', 'subsec')":                    "SELECT date(" + now + "), time( " + now + " ), julianday(" + now + "), unixepoch(" + now + ", 'subsec')",
		"SELECT strftime('%s', 'now'), strftime('%Y'), datetime(), unixepoch()":                              "SELECT strftime('%s', " + now + "), strftime('%Y', " + now + "), datetime(" + now + "), unixepoch(" + now + ")",
		"SELECT timediff('now', at) FROM t":                                                                  "SELECT timediff(" + now + ", at) FROM t",
		"SELECT datetime(at, '+1 day'), date(at) FROM t":                                                     "SELECT datetime(at, '+1 day'), date(at) FROM t",
		"SELECT 'now', 'CURRENT_TIMESTAMP', \"current_time\" -- CURRENT_DATE":                                "SELECT 'now', 'CURRENT_TIMESTAMP', \"current_time\" -- CURRENT_DATE",
		"SELECT datetime(lower('NOW'))":                                                                      "SELECT datetime(lower('NOW'))",
		"SELECT t.current_date FROM t":                                                                       "SELECT t.current_date FROM t",
	} {
		got, notes := SQLite(q, 7)
		if got != want || len(notes) > 0 {
			t.Errorf("SQLite(%q)\n got %q %v\nwant %q", q, got, notes, want)
		}
	}
	// The key changes; the cached rewrite does not.
	if got, _ := SQLite("SELECT CURRENT_TIMESTAMP", 12); got != "SELECT (datetime(idemcheck_now(12)))" {
		t.Errorf("key 12: %q", got)
	}
}

func TestPostgres(t *testing.T) {
	for q, want := range map[string]string{
		"INSERT INTO t (at) VALUES (CURRENT_TIMESTAMP)":                                                                          "INSERT INTO t (at) VALUES ((now()))",
		"CREATE TABLE t (at timestamptz DEFAULT current_timestamp)":                                                              "CREATE TABLE t (at timestamptz DEFAULT (now()))",
		"SELECT current_timestamp(3), LOCALTIMESTAMP, localtimestamp(0), current_date, current_time, current_time(2), localtime": "SELECT (now()::timestamptz(3)), (now()::timestamp), (now()::timestamp(0)), (now()::date), (now()::timetz), (now()::timetz(2)), (now()::time)",
		"DELETE FROM p WHERE at < NOW() - INTERVAL '30 days'":                                                                    "DELETE FROM p WHERE at < NOW() - INTERVAL '30 days'",
		"SELECT CURRENT_DATE::text, CURRENT_TIMESTAMP AT TIME ZONE 'UTC'":                                                        "SELECT (now()::date)::text, (now()) AT TIME ZONE 'UTC'",
		"CREATE FUNCTION f() RETURNS date LANGUAGE sql AS $$ SELECT current_date $$":                                             "CREATE FUNCTION f() RETURNS date LANGUAGE sql AS $$ SELECT (now()::date) $$",
		"SELECT 'current_date', \"current_date\" FROM t":                                                                         "SELECT 'current_date', \"current_date\" FROM t",
	} {
		got, notes := Postgres(q)
		if got != want || len(notes) > 0 {
			t.Errorf("Postgres(%q)\n got %q %v\nwant %q", q, got, notes, want)
		}
	}
}

func TestPostgresNamesWhatStaysOnTheMachinesClock(t *testing.T) {
	for q, want := range map[string]string{
		"SELECT 'now'::timestamptz":                     "the literal 'now' cast",
		"SELECT timestamptz 'now'":                      "the literal 'now' cast",
		"SELECT CAST('today' AS date)":                  "the literal 'today' cast",
		"CREATE TABLE t (at timestamptz DEFAULT 'now')": "the literal 'now' cast",
		"SELECT timestamp with time zone 'yesterday'":   "the literal 'yesterday' cast",
		"SELECT pg_catalog.now()":                       "pg_catalog.now() names the server's own clock",
		"SELECT pg_catalog.clock_timestamp()":           "pg_catalog.clock_timestamp()",
		"SELECT age(at) FROM t":                         "age() with one argument",
		"DO $$ BEGIN PERFORM 'now'::timestamp; END $$":  "the literal 'now' cast",
	} {
		_, notes := Postgres(q)
		if len(notes) != 1 || !strings.Contains(notes[0], want) {
			t.Errorf("Postgres(%q): notes %q, want one with %q", q, notes, want)
		}
	}
	for _, q := range []string{"INSERT INTO notes VALUES ('now')", "SELECT age(a, b) FROM t", "SELECT now(), x.now FROM x"} {
		if _, notes := Postgres(q); len(notes) > 0 {
			t.Errorf("Postgres(%q): notes %q, want none", q, notes)
		}
	}
}

func TestArgNotes(t *testing.T) {
	if n := ArgNotes(true, named("e1", int64(3), []byte(" Today "), "now")); len(n) != 2 || !strings.Contains(n[0], "'today'") {
		t.Errorf("postgres: %q", n)
	}
	if n := ArgNotes(false, named("today", "NOW")); len(n) != 1 || !strings.Contains(n[0], "SQLite") {
		t.Errorf("sqlite: %q", n)
	}
}

func TestPostgresReadsClock(t *testing.T) {
	for q, want := range map[string]bool{
		"SELECT 1 FROM t WHERE id = $1":                 false,
		"SELECT now()":                                  true,
		"INSERT INTO t VALUES (CURRENT_DATE)":           true,
		"SELECT statement_timestamp ()":                 true,
		"CREATE TABLE t (at timestamptz DEFAULT NOW())": true,
		"CREATE FUNCTION f() RETURNS void AS $$ BEGIN PERFORM clock_timestamp(); END $$ LANGUAGE plpgsql": true,
		"SELECT 'now()', \"now\" FROM t": false,
	} {
		if got := PostgresReadsClock(q); got != want {
			t.Errorf("PostgresReadsClock(%q) = %v", q, got)
		}
	}
}
