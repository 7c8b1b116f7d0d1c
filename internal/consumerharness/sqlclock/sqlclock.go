// Package sqlclock points a statement's reads of the database's own clock
// at the harness's clock, so that CURRENT_TIMESTAMP, now() and column
// defaults follow the scenario's time rather than the machine's. It
// rewrites the statement's text over the tokens of the project's one SQL
// scanner (internal/sqlscan), so that it agrees with the schema splitter
// and the model checker about where a string, a comment or a body ends,
// and it names what it cannot
// reach: a construct that stays on the machine's clock is never silent.
//
// SQLite reads the machine's clock inside its C library (modernc.org's
// translation reads it with a system call, not through Go's time.Now, so
// a testing/synctest bubble does not reach it). SQLite rewrites each read
// into a call of an application-defined function, SQLiteFunc, which the
// caller registers and which returns the scenario's time of the database
// the key names:
//
//   - CURRENT_TIMESTAMP, CURRENT_DATE and CURRENT_TIME become
//     (datetime(idemcheck_now(K))), (date(...)) and (time(...));
//   - the time value 'now' given to datetime, date, time, julianday,
//     unixepoch, strftime or timediff becomes idemcheck_now(K), and the
//     same functions called without a time value ("datetime()",
//     "strftime('%s')") get it added.
//
// PostgreSQL's functions are reached without rewriting: the harness
// defines now(), transaction_timestamp(), statement_timestamp(),
// clock_timestamp() and timeofday() in the run's schema, ahead of
// pg_catalog in the search_path. The SQL standard's keywords are not
// function calls, so Postgres rewrites them: CURRENT_TIMESTAMP becomes
// (now()), LOCALTIMESTAMP (now()::timestamp), CURRENT_DATE (now()::date),
// CURRENT_TIME (now()::timetz) and LOCALTIME (now()::time), keeping a
// precision ("CURRENT_TIMESTAMP(3)" becomes (now()::timestamptz(3))), also
// inside dollar-quoted function bodies.
//
// Both run on a schema's statements too, so column defaults (DEFAULT
// CURRENT_TIMESTAMP, DEFAULT (datetime('now')), DEFAULT now()) follow the
// scenario's clock.
//
// What stays on the machine's clock, and is named in the notes a rewrite
// returns: PostgreSQL's special literals 'now', 'today', 'tomorrow' and
// 'yesterday' cast to a date/time type ('now'::timestamptz, timestamptz
// 'now', CAST('now' AS date), DEFAULT 'now'); pg_catalog.now() and the
// other clock functions named with their schema; age() with one argument;
// and (see ArgNotes) such a literal passed as a bound parameter, which
// the database parses where no rewriting reaches.
package sqlclock

import (
	"database/sql/driver"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/idemcheck/idemcheck/internal/sqlscan"
)

// SQLiteFunc is the application-defined SQLite function the rewritten
// statements call: SQLiteFunc(key) returns the scenario's time of the
// database with that key, as text in SQLite's format with milliseconds,
// 'YYYY-MM-DD HH:MM:SS.SSS', UTC.
const SQLiteFunc = "idemcheck_now"

// SQLiteTimeFormat is the Go layout of SQLiteFunc's result.
const SQLiteTimeFormat = "2006-01-02 15:04:05.000"

// rewritten is a statement's rewrite: parts to join with the key (SQLite)
// or the text (PostgreSQL), and the notes.
type rewritten struct {
	parts []string
	notes []string
	// clock: the rewritten statement calls a clock function.
	clock bool
}

var (
	sqliteCache   sync.Map // query -> *rewritten
	postgresCache sync.Map
)

// keyMark stands for the key in a cached SQLite rewrite.
const keyMark = "\x00"

// SQLite rewrites query for the SQLite database whose clock SQLiteFunc
// finds by key, and returns what in it stays on the machine's clock.
func SQLite(query string, key int64) (string, []string) {
	rw := cached(&sqliteCache, query, rewriteSQLite)
	if len(rw.parts) == 1 {
		return rw.parts[0], rw.notes
	}
	return strings.Join(rw.parts, strconv.FormatInt(key, 10)), rw.notes
}

// Postgres rewrites query for PostgreSQL (see the package documentation)
// and returns what in it stays on the machine's clock.
func Postgres(query string) (string, []string) {
	rw := cached(&postgresCache, query, rewritePostgres)
	return rw.parts[0], rw.notes
}

// PostgresReadsClock reports whether query, rewritten, calls one of the
// clock functions (now(), statement_timestamp(), ...), in its text or in
// a dollar-quoted body: a statement that does not, in a schema that does
// not, never reads the database's clock, so the harness need not move it.
func PostgresReadsClock(query string) bool {
	return cached(&postgresCache, query, rewritePostgres).clock
}

func cached(cache *sync.Map, query string, f func(string) *rewritten) *rewritten {
	if rw, ok := cache.Load(query); ok {
		return rw.(*rewritten)
	}
	rw := f(query)
	cache.Store(query, rw)
	return rw
}

// dateFuncs are SQLite's date and time functions, and the position of
// their first time value.
var dateFuncs = map[string]int{"datetime": 0, "date": 0, "time": 0, "julianday": 0, "unixepoch": 0, "strftime": 1, "timediff": 0}

func rewriteSQLite(query string) *rewritten {
	if strings.Contains(query, keyMark) {
		return &rewritten{parts: []string{query}}
	}
	ts, _ := sqlscan.Lex(query)
	now := SQLiteFunc + "(" + keyMark + ")"
	changed := false
	for i, t := range ts {
		if t.Kind != sqlscan.Word || qualified(ts, i) {
			continue
		}
		lower := strings.ToLower(t.Text)
		switch lower {
		case "current_timestamp", "current_date", "current_time":
			ts[i].Text = "(" + map[string]string{"current_timestamp": "datetime", "current_date": "date", "current_time": "time"}[lower] + "(" + now + "))"
			changed = true
			continue
		}
		first, ok := dateFuncs[lower]
		if !ok {
			continue
		}
		open := sqlscan.Next(ts, i+1)
		if open >= len(ts) || ts[open].Kind != sqlscan.LParen {
			continue
		}
		end := sqlscan.Closing(ts, open)
		if end >= len(ts) {
			continue
		}
		as := sqlscan.Args(ts, open, end)
		for _, a := range as {
			if j := sqlscan.Next(ts, a[0]); j < a[1] && sqlscan.Next(ts, j+1) >= a[1] && ts[j].Kind == sqlscan.String && strings.EqualFold(strings.TrimSpace(ts[j].Value()), "now") {
				ts[j].Text = now
				changed = true
			}
		}
		if len(as) == first && lower != "timediff" {
			// No time value: the function reads 'now'.
			sep := ""
			if first > 0 {
				sep = ", "
			}
			ts[end].Text = sep + now + ")"
			changed = true
		}
	}
	if !changed {
		return &rewritten{parts: []string{query}}
	}
	return &rewritten{parts: strings.Split(sqlscan.Join(ts), keyMark)}
}

// qualified reports whether the word at ts[i] follows a dot (a column or
// a function of a named schema).
func qualified(ts []sqlscan.Token, i int) bool {
	p := sqlscan.Prev(ts, i)
	return p >= 0 && ts[p].Kind == sqlscan.Dot
}

// pgKeywords are PostgreSQL's clock keywords and what they become, with
// the type a precision is cast to ("" for none).
var pgKeywords = map[string][2]string{
	"current_timestamp": {"now()", "timestamptz"},
	"localtimestamp":    {"now()::timestamp", "timestamp"},
	"current_time":      {"now()::timetz", "timetz"},
	"localtime":         {"now()::time", "time"},
	"current_date":      {"now()::date", ""},
}

// pgClockFuncs are the clock functions the run's schema defines.
var pgClockFuncs = map[string]bool{"now": true, "transaction_timestamp": true, "statement_timestamp": true, "clock_timestamp": true, "timeofday": true}

// pgSpecial are PostgreSQL's date/time input values read from the clock.
var pgSpecial = map[string]bool{"now": true, "today": true, "tomorrow": true, "yesterday": true}

// pgTimeTypes are the type names a literal may be cast to or prefixed by.
var pgTimeTypes = map[string]bool{"timestamp": true, "timestamptz": true, "date": true, "time": true, "timetz": true, "zone": true}

func rewritePostgres(query string) *rewritten {
	ts, _ := sqlscan.Lex(query)
	var notes []string
	note := func(n string) {
		for _, m := range notes {
			if m == n {
				return
			}
		}
		notes = append(notes, n)
	}
	changed, clock := false, false
	for i := 0; i < len(ts); i++ {
		t := ts[i]
		switch t.Kind {
		case sqlscan.Dollar:
			tag := sqlscan.DollarTag(t.Text)
			if len(t.Text) < 2*len(tag) || !strings.HasSuffix(t.Text, tag) {
				continue // unterminated
			}
			body := t.Text[len(tag) : len(t.Text)-len(tag)]
			inner := rewritePostgres(body)
			for _, n := range inner.notes {
				note(n)
			}
			clock = clock || inner.clock
			if inner.parts[0] != body {
				ts[i].Text = tag + inner.parts[0] + tag
				changed = true
			}
		case sqlscan.String:
			if pgSpecial[strings.ToLower(strings.TrimSpace(t.Value()))] && castToTime(ts, i) {
				note("the literal '" + strings.TrimSpace(t.Value()) + "' cast to a date/time type: PostgreSQL reads it from the machine's clock (write now(), current_date)")
			}
		case sqlscan.Word:
			lower := strings.ToLower(t.Text)
			if kw, ok := pgKeywords[lower]; ok && !qualified(ts, i) {
				repl := kw[0]
				if open := sqlscan.Next(ts, i+1); kw[1] != "" && open < len(ts) && ts[open].Kind == sqlscan.LParen {
					end := sqlscan.Closing(ts, open)
					if end < len(ts) {
						repl = "now()::" + kw[1] + sqlscan.Join(ts[open:end+1])
						for j := i + 1; j <= end; j++ {
							ts[j].Text = ""
						}
						ts[i].Text = "(" + repl + ")"
						changed, clock = true, true
						i = end
						continue
					}
				}
				ts[i].Text = "(" + repl + ")"
				changed, clock = true, true
				continue
			}
			open := sqlscan.Next(ts, i+1)
			if open >= len(ts) || ts[open].Kind != sqlscan.LParen {
				continue
			}
			clock = clock || pgClockFuncs[lower]
			if pgClockFuncs[lower] && qualified(ts, i) {
				if p := sqlscan.Prev(ts, sqlscan.Prev(ts, i)); p >= 0 && ts[p].Is("pg_catalog") {
					note("pg_catalog." + lower + "() names the server's own clock: PostgreSQL reads it from the machine's clock (write " + lower + "())")
				}
			}
			if lower == "age" {
				if end := sqlscan.Closing(ts, open); end < len(ts) && len(sqlscan.Args(ts, open, end)) == 1 {
					note("age() with one argument measures from PostgreSQL's own current_date, the machine's (write age(now(), x))")
				}
			}
		}
	}
	if !changed {
		return &rewritten{parts: []string{query}, notes: notes, clock: clock}
	}
	return &rewritten{parts: []string{sqlscan.Join(ts)}, notes: notes, clock: clock}
}

// castToTime reports whether the string literal at ts[i] is given a
// date/time type: 'now'::timestamptz, timestamptz 'now', CAST('now' AS
// date), or a column's DEFAULT 'now'.
func castToTime(ts []sqlscan.Token, i int) bool {
	if n := sqlscan.Next(ts, i+1); n < len(ts) && ts[n].Kind == sqlscan.Cast {
		if ty := sqlscan.Next(ts, n+1); ty < len(ts) && ts[ty].Kind == sqlscan.Word && isTimeType(ts[ty].Text) {
			return true
		}
	}
	p := sqlscan.Prev(ts, i)
	if p < 0 {
		return false
	}
	if ts[p].Kind == sqlscan.Word && (pgTimeTypes[strings.ToLower(ts[p].Text)] || ts[p].Is("default")) {
		return true
	}
	if ts[p].Kind == sqlscan.LParen {
		if f := sqlscan.Prev(ts, p); f >= 0 && ts[f].Is("cast") {
			end := sqlscan.Closing(ts, p)
			for j := i + 1; j < end && j < len(ts); j++ {
				if ts[j].Kind == sqlscan.Word && isTimeType(ts[j].Text) {
					return true
				}
			}
		}
	}
	return false
}

func isTimeType(w string) bool {
	w = strings.ToLower(w)
	return pgTimeTypes[w] && w != "zone"
}

// ArgNotes returns what among a statement's bound values a database reads
// from the machine's clock: 'now' for SQLite's date functions, and
// PostgreSQL's 'now', 'today', 'tomorrow' and 'yesterday' when the
// parameter is a date/time. The values are strings or byte slices; the
// harness cannot tell how the statement uses them, so the note says
// "when".
func ArgNotes(postgres bool, args []driver.NamedValue) []string {
	var out []string
	for _, a := range args {
		var s string
		switch v := a.Value.(type) {
		case string:
			s = v
		case []byte:
			s = string(v)
		default:
			continue
		}
		s = strings.ToLower(strings.TrimSpace(s))
		switch {
		case postgres && pgSpecial[s]:
			out = append(out, "a parameter '"+s+"': PostgreSQL reads it from the machine's clock when the parameter is a date/time")
		case !postgres && s == "now":
			out = append(out, "a parameter 'now': SQLite's date functions read it from the machine's clock when they are given it")
		}
	}
	return out
}

var keyedRE = regexp.MustCompile(SQLiteFunc + `\(\d+\)`)

// Unkeyed is a rewritten statement (or a schema object's SQL that holds
// one, a column default) with the database's clock key taken out: the
// same for every database.
func Unkeyed(sql string) string {
	if !strings.Contains(sql, SQLiteFunc) {
		return sql
	}
	return keyedRE.ReplaceAllString(sql, SQLiteFunc+"()")
}
