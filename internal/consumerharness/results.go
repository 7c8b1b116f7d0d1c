package consumerharness

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/idemcheck/idemcheck/internal/consumerharness/sqlhook"
)

// What each statement returned, on its trace line.
//
// A worker's line of a call ("w2 query SELECT count(*) ... [e1]") ends with
// what the call returned to the consumer once it returned: "-> 1 row: (0)"
// for a query (the values the consumer was handed), "-> 1 row affected"
// or "-> 0 rows affected" for an exec, "-> error: ..." for a call the
// database refused. The hook is told of every call's result and of every
// row the consumer was handed (sqlhook.Observer, sqlhook.RowsReporter), on
// the worker's goroutine while the scheduler waits for it, so the text is
// the same in every play of a scenario; nothing the consumer reads is
// changed. Rows the consumer closed without reading (a QueryRow of a
// query with several rows) are counted, never shown: it never saw them.

// Limits of a result's text.
const (
	resultRows   = 3  // rows shown
	resultValues = 6  // values shown of a row
	resultValue  = 32 // characters of a value
)

// callResult is what a call returned, as far as it is known.
type callResult struct {
	// line is the line (from 1) that shows it.
	line int
	op   string
	// err is the error the call returned, "" for none.
	err string
	// affected is an exec's count of rows affected, when known.
	affected    int64
	hasAffected bool
	// A query's rows: the first resultRows rows handed to the consumer,
	// formatted, the number handed (read), whether they were closed, and
	// how many followed that the consumer did not read (-1: unknown).
	query  bool
	rows   []string
	read   int
	closed bool
	more   int
}

func (c *callResult) String() string {
	switch {
	case c.err != "":
		return " -> error: " + quoteShort(c.err)
	case c.hasAffected:
		return fmt.Sprintf(" -> %s affected", plural(int(c.affected), "row"))
	case !c.query:
		return ""
	}
	shown := strings.Join(c.rows, ", ")
	if c.read > len(c.rows) {
		shown += fmt.Sprintf(", ... %d more", c.read-len(c.rows))
	}
	switch {
	case !c.closed && c.read == 0:
		return " -> no row read (the rows were never closed)"
	case !c.closed:
		return fmt.Sprintf(" -> %s read: %s (the rows were never closed)", plural(c.read, "row"), shown)
	case c.more == 0 && c.read == 0:
		return " -> no rows"
	case c.more == 0:
		return fmt.Sprintf(" -> %s: %s", plural(c.read, "row"), shown)
	case c.read == 0 && c.more > 0:
		return fmt.Sprintf(" -> %s, none read (closed before the first)", plural(c.more, "row"))
	case c.read == 0:
		return " -> closed before the first row (whether there were rows is unknown)"
	case c.more > 0:
		return fmt.Sprintf(" -> %d rows, %d read: %s (%d more closed unread)", c.read+c.more, c.read, shown, c.more)
	}
	return fmt.Sprintf(" -> %s read: %s (closed early: more rows unknown)", plural(c.read, "row"), shown)
}

// plural is "1 row", "0 rows", "3 rows".
func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return strconv.Itoa(n) + " " + what + "s"
}

// bindResult makes line idx (from 1) the line that shows what the call
// numbered seq returns; an earlier line of the same call (the call's line
// before the worker waited for a lock, say) no longer does.
func (t *Trace) bindResult(seq uint64, idx int) {
	if seq == 0 || idx < 1 {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.results == nil {
		t.results = map[uint64]*callResult{}
	}
	cr := t.results[seq]
	if cr == nil {
		cr = &callResult{more: -1}
		t.results[seq] = cr
	}
	if cr.line > 0 && t.entries[cr.line-1].res == cr {
		t.entries[cr.line-1].res = nil
	}
	t.entries[idx-1].res, cr.line = cr, idx
}

// markEffect says line idx (from 1) is a call that writes the consumer's
// effects; inTx that it runs inside a transaction.
func (t *Trace) markEffect(idx int, inTx bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.entries[idx-1].effect, t.entries[idx-1].inTx = true, inTx
}

// unbindResult forgets the call numbered seq: the line that says how it
// ended (a wait for a lock given up) says what it returned.
func (t *Trace) unbindResult(seq uint64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if cr := t.results[seq]; cr != nil {
		if cr.line > 0 && t.entries[cr.line-1].res == cr {
			t.entries[cr.line-1].res = nil
		}
		delete(t.results, seq)
	}
}

// result runs f on the result of the call numbered seq, if a line shows it.
func (t *Trace) result(seq uint64, f func(*callResult)) {
	if t == nil || seq == 0 {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if cr := t.results[seq]; cr != nil {
		f(cr)
	}
}

// traceReturned records what call c returned on its line. The errors the
// trace tells otherwise (an injected failure, a crash, a context that
// ended) are left out.
func (t *Trace) traceReturned(c sqlhook.Call, res driver.Result, err error) {
	t.result(c.Seq, func(cr *callResult) {
		cr.op = string(c.Op)
		switch {
		case err != nil:
			if errors.Is(err, ErrInjected) || errors.Is(err, errCrashing) || errors.Is(err, sqlhook.ErrKilled) ||
				errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
				return
			}
			cr.err = oneLine(err.Error())
		case c.Op == sqlhook.Exec && res != nil:
			if n, e := res.RowsAffected(); e == nil {
				cr.affected, cr.hasAffected = n, true
			}
		case c.Op == sqlhook.Query:
			cr.query = true
		}
	})
}

// traceRow records a row the consumer was handed.
func (t *Trace) traceRow(c sqlhook.Call, dest []driver.Value) {
	t.result(c.Seq, func(cr *callResult) {
		cr.query = true
		cr.read++
		if len(cr.rows) < resultRows {
			cr.rows = append(cr.rows, formatRow(dest))
		}
	})
}

// traceRowsClosed records how a query's rows ended.
func (t *Trace) traceRowsClosed(c sqlhook.Call, read, more int) {
	t.result(c.Seq, func(cr *callResult) {
		cr.query, cr.closed, cr.more = true, true, more
		cr.read = read
	})
}

// formatRow renders a row's values: (0), ("e1", 100).
func formatRow(vals []driver.Value) string {
	var b strings.Builder
	b.WriteByte('(')
	for i, v := range vals {
		if i > 0 {
			b.WriteString(", ")
		}
		if i == resultValues {
			fmt.Fprintf(&b, "... %d more", len(vals)-i)
			break
		}
		b.WriteString(formatValue(v))
	}
	b.WriteByte(')')
	return b.String()
}

// formatValue renders one value a driver returned.
func formatValue(v driver.Value) string {
	switch x := v.(type) {
	case nil:
		return "NULL"
	case string:
		return strconv.Quote(cut(x))
	case []byte:
		if utf8.Valid(x) && !strings.ContainsFunc(string(x), func(r rune) bool { return r < ' ' && r != '\t' }) {
			return strconv.Quote(cut(string(x)))
		}
		h := fmt.Sprintf("%x", x)
		if len(h) > resultValue {
			h = h[:resultValue] + "..."
		}
		return "x'" + h + "'"
	case time.Time:
		return x.UTC().Format("2006-01-02T15:04:05.000Z")
	}
	return cut(fmt.Sprint(v))
}

// cut shortens s to resultValue characters.
func cut(s string) string { return shorten(s, resultValue) }

// shorten cuts s to n characters, the last three "...", never inside a
// character.
func shorten(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-3]) + "..."
}

// oneLine is s on one line.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// effectTables are the tables the consumer's Effects query reads, by
// lower-case name (nil when it cannot be read).
func effectTables(query string) map[string]bool {
	if m, ok := effectTablesOf.load(query); ok {
		return m
	}
	return effectTablesOf.store(query, readEffectTables(query))
}

// effectTablesOf are effectTables' answers by query (read, never
// written, by their users).
var effectTablesOf textMemo[string, map[string]bool]

// readEffectTables is effectTables, read from the query's tokens.
func readEffectTables(query string) map[string]bool {
	toks, ok := tokenize(query)
	if !ok || len(toks) == 0 {
		return nil
	}
	p := &sqlParser{toks: toks}
	shape, ok := p.statement()
	if !ok || shape.all {
		return nil
	}
	out := map[string]bool{}
	for _, a := range shape.acc {
		out[a.table] = true
	}
	return out
}

// writesEffectsOf is writesEffects where tables are effectTables(query),
// remembered by query and statement text (what a statement writes is its
// text's: its arguments give only the keys of the rows it touches), up to
// maxMemo of them.
func writesEffectsOf(query string, c sqlhook.Call, tables map[string]bool) bool {
	if c.Op != sqlhook.Exec && c.Op != sqlhook.Query || len(tables) == 0 {
		return false
	}
	k := effectsKey{query, c.SQL}
	if v, ok := writesEffectsMemo.load(k); ok {
		return v
	}
	return writesEffectsMemo.store(k, writesEffects(c, tables))
}

type effectsKey struct{ query, stmt string }

var writesEffectsMemo textMemo[effectsKey, bool]

// writesEffects reports whether call c writes a table of tables: an
// INSERT, UPDATE or DELETE of the consumer's effects.
func writesEffects(c sqlhook.Call, tables map[string]bool) bool {
	if c.Op != sqlhook.Exec && c.Op != sqlhook.Query || len(tables) == 0 {
		return false
	}
	toks, ok := tokenize(c.SQL)
	if !ok || len(toks) == 0 {
		return false
	}
	p := &sqlParser{toks: toks, args: c.Args}
	shape, ok := p.statement()
	if !ok || shape.all {
		return false
	}
	for _, a := range shape.acc {
		if a.write && tables[a.table] {
			return true
		}
	}
	return false
}
