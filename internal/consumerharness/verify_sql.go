package consumerharness

import (
	"database/sql/driver"
	"fmt"
	"math/bits"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/idemcheck/idemcheck/internal/sqlscan"
)

// What a choice of the scheduler touches, for the partial-order reduction
// of Verify: two choices whose footprints do not conflict commute (either
// order leaves the same state, and neither disables the other), so only
// one of their orders needs to be tried. Every approximation here is on
// the safe side: what cannot be read touches everything.

// The coarse resources of a footprint, as bits.
const (
	resClock   uint64 = 1 << iota // the scenario's time (a handler may read it)
	resExt                        // the world outside the database (handler.Point)
	resBroker                     // every message of the broker
	resOffsets                    // the broker's next offset (duplicates, replays)
	resDLQ                        // the dead-letter queue
	resLock                       // SQLite's database lock
	resDB                         // every table and the lock
	resSnap                       // the snapshot a transaction's first read takes (REPEATABLE READ)
	resOwn0    uint64 = 1 << 8    // worker i's own state: resOwn0 << i (8 workers)
	resMsg0    uint64 = 1 << 16   // the message at offset o: resMsg0 << o (o < maxMsgBits)
)

const maxMsgBits = 48

// brokerBits are every resource of the broker.
const brokerBits = resBroker | resOffsets | resDLQ | ^(resMsg0 - 1)

// footprint is what one choice reads and writes.
type footprint struct {
	// all makes the choice conflict with every other.
	all    bool
	ws, rs uint64
	// acc are its table accesses.
	acc []access
}

// access is a read or a write of a table: of its rows whose columns have
// the values keys gives (nil: any row).
type access struct {
	table string
	write bool
	keys  []colValue
}

// colValue is one equality a statement's rows satisfy: column = value,
// the value in a canonical form ("s:e1", "i:100"; see canon).
type colValue struct{ col, val string }

func own(w int) uint64 { return resOwn0 << w }

func msgBit(offset int64) uint64 {
	if offset < 0 || offset >= maxMsgBits {
		return resBroker
	}
	return resMsg0 << offset
}

// touchesDB reports whether f touches the database at all.
func (f footprint) touchesDB() bool {
	return len(f.acc) > 0 || (f.ws|f.rs)&(resDB|resLock) != 0
}

// normal widens the coarse resources that stand for others.
func (f footprint) normal() footprint {
	if (f.ws|f.rs)&resBroker != 0 {
		f.ws |= brokerBits
	}
	return f
}

// conflicts reports whether a and b may not commute.
func conflicts(a, b footprint) bool {
	if a.all || b.all {
		return true
	}
	a, b = a.normal(), b.normal()
	if a.ws&(b.ws|b.rs) != 0 || b.ws&a.rs != 0 {
		return true
	}
	if ((a.ws|a.rs)&resDB != 0 && b.touchesDB()) || ((b.ws|b.rs)&resDB != 0 && a.touchesDB()) {
		return true
	}
	for _, x := range a.acc {
		for _, y := range b.acc {
			if x.table != y.table || (!x.write && !y.write) {
				continue
			}
			if x.write && y.write {
				return true // two writers of one table: a unique key, a rowid, a lock
			}
			if !disjoint(x.keys, y.keys) {
				return true
			}
		}
	}
	return false
}

// disjoint reports whether no row can satisfy both sets of equalities: a
// column both constrain, to values of one type that differ. Values of
// different types may compare equal (SQLite's affinity): not disjoint.
func disjoint(a, b []colValue) bool {
	for _, x := range a {
		for _, y := range b {
			if x.col == y.col && x.val[:2] == y.val[:2] && x.val != y.val {
				return true
			}
		}
	}
	return false
}

// String renders a footprint for a test's failure message.
func (f footprint) String() string {
	if f.all {
		return "everything"
	}
	var parts []string
	names := []string{"clock", "outside", "broker", "offsets", "dlq", "lock", "db", "snapshot"}
	for i, n := range names {
		bit := uint64(1) << i
		switch {
		case f.ws&bit != 0:
			parts = append(parts, "w:"+n)
		case f.rs&bit != 0:
			parts = append(parts, "r:"+n)
		}
	}
	for w := range 8 {
		if f.ws&own(w) != 0 {
			parts = append(parts, fmt.Sprintf("w:own%d", w+1))
		}
	}
	if m := (f.ws | f.rs) >> 16; m != 0 {
		for m != 0 {
			o := bits.TrailingZeros64(m)
			parts = append(parts, fmt.Sprintf("msg%d", o))
			m &^= 1 << o
		}
	}
	for _, a := range f.acc {
		mode := "r:"
		if a.write {
			mode = "w:"
		}
		s := mode + a.table
		if len(a.keys) > 0 {
			var ks []string
			for _, k := range a.keys {
				ks = append(ks, k.col+"="+k.val)
			}
			s += "[" + strings.Join(ks, ",") + "]"
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, " ")
}

// sqlShape is what a statement touches, read from its text: the tables
// it reads and writes, the rows where they can be told, or everything.
type sqlShape struct {
	all bool
	acc []access
}

// statementFootprint reads what statement query touches with args, among
// tables (the known tables, by lower-case name). A statement that names
// anything else (a view, a temporary table, a function's table), or that
// cannot be read, touches every table.
func statementFootprint(query string, args []driver.NamedValue, tables map[string]bool) sqlShape {
	toks, ok := tokenize(query)
	if !ok || len(toks) == 0 {
		return sqlShape{all: true}
	}
	// More than one statement.
	for i, t := range toks {
		if t.kind == tPunct && t.text == ";" && i != len(toks)-1 {
			return sqlShape{all: true}
		}
	}
	p := &sqlParser{toks: toks, args: args}
	shape, ok := p.statement()
	if !ok {
		return sqlShape{all: true}
	}
	for _, a := range shape.acc {
		if !tables[a.table] {
			return sqlShape{all: true}
		}
	}
	return shape
}

type tokKind int

const (
	tIdent tokKind = iota
	tString
	tNumber
	tParam
	tPunct
)

type token struct {
	kind tokKind
	text string // identifiers lower-cased; strings unquoted
}

func (t token) is(word string) bool { return t.kind == tIdent && t.text == word }

// tokenize splits a statement into tokens with the project's one SQL
// scanner (internal/sqlscan); ok is false for text it cannot read (an
// unclosed quote or comment).
func tokenize(s string) ([]token, bool) {
	toks, complete := sqlscan.Lex(s)
	if !complete {
		return nil, false
	}
	out := make([]token, 0, len(toks))
	for _, t := range toks {
		switch t.Kind {
		case sqlscan.Space:
		case sqlscan.Word, sqlscan.Quoted:
			out = append(out, token{tIdent, strings.ToLower(t.Ident())})
		case sqlscan.String, sqlscan.Dollar:
			out = append(out, token{tString, t.Value()})
		case sqlscan.Number:
			out = append(out, token{tNumber, t.Text})
		case sqlscan.Param:
			out = append(out, token{tParam, t.Text})
		default:
			out = append(out, token{tPunct, t.Text})
		}
	}
	return out, true
}

type sqlParser struct {
	toks []token
	args []driver.NamedValue
	// nextOrdinal numbers the anonymous parameters ("?").
	nextOrdinal int
	ordinals    map[int]int // token index of a "?" -> its ordinal
}

// statement reads the statement's shape.
func (p *sqlParser) statement() (sqlShape, bool) {
	p.numberParams()
	first := p.toks[0]
	switch {
	case first.is("select"), first.is("values"):
		return p.selectShape()
	case first.is("insert"), first.is("replace"):
		return p.insertShape()
	case first.is("update"):
		return p.updateShape()
	case first.is("delete"):
		return p.deleteShape()
	}
	return sqlShape{}, false
}

// numberParams gives each anonymous "?" its ordinal, in order.
func (p *sqlParser) numberParams() {
	p.ordinals = map[int]int{}
	for i, t := range p.toks {
		if t.kind == tParam && t.text == "?" {
			p.nextOrdinal++
			p.ordinals[i] = p.nextOrdinal
		}
	}
}

// readTables lists every table the statement reads: the names after FROM
// and JOIN (and in a FROM list), at any depth. ok is false for a FROM it
// cannot follow.
func (p *sqlParser) readTables(skip string) ([]string, bool) {
	var out []string
	for i := 0; i < len(p.toks); i++ {
		t := p.toks[i]
		if !t.is("from") && !t.is("join") {
			continue
		}
		for j := i + 1; j < len(p.toks); {
			n := p.toks[j]
			if n.kind == tPunct && n.text == "(" {
				break // a subquery: its own FROM is read in turn
			}
			if n.kind != tIdent {
				return nil, false
			}
			name, next := p.qualified(j)
			if next < len(p.toks) && p.toks[next].kind == tPunct && p.toks[next].text == "(" {
				return nil, false // a table-valued function
			}
			if name != skip || !t.is("from") {
				out = append(out, name)
			}
			j = next
			// An alias.
			if j < len(p.toks) && p.toks[j].is("as") {
				j += 2
			} else if j < len(p.toks) && p.toks[j].kind == tIdent && !clauseWord(p.toks[j].text) {
				j++
			}
			if t.is("from") && j < len(p.toks) && p.toks[j].kind == tPunct && p.toks[j].text == "," {
				j++
				continue
			}
			break
		}
	}
	return out, true
}

// qualified reads a possibly schema-qualified name at i and returns its
// last part and the index after it.
func (p *sqlParser) qualified(i int) (string, int) {
	name := p.toks[i].text
	j := i + 1
	for j+1 < len(p.toks) && p.toks[j].kind == tPunct && p.toks[j].text == "." && p.toks[j+1].kind == tIdent {
		name = p.toks[j+1].text
		j += 2
	}
	return name, j
}

// clauseWord reports words that end a table reference.
func clauseWord(w string) bool {
	switch w {
	case "where", "group", "order", "limit", "offset", "having", "join", "inner", "left", "right", "full", "cross",
		"natural", "on", "using", "union", "except", "intersect", "window", "returning", "set", "values", "for",
		"select", "default", "do", "conflict", "outer", "lateral":
		return true
	}
	return false
}

// subqueries reports whether a SELECT appears after the first token.
func (p *sqlParser) subqueries() bool {
	for _, t := range p.toks[1:] {
		if t.is("select") {
			return true
		}
	}
	return false
}

// locksRows reports a SELECT ... FOR UPDATE (or SHARE, or MySQL's LOCK IN
// SHARE MODE): it takes row locks.
func (p *sqlParser) locksRows() bool {
	for i := 0; i+1 < len(p.toks); i++ {
		if p.toks[i].is("lock") && p.toks[i+1].is("in") {
			return true // MySQL's LOCK IN SHARE MODE
		}
		if p.toks[i].is("for") && (p.toks[i+1].is("update") || p.toks[i+1].is("share") || p.toks[i+1].is("no") || p.toks[i+1].is("key")) {
			return true
		}
	}
	return false
}

func (p *sqlParser) selectShape() (sqlShape, bool) {
	tables, ok := p.readTables("")
	if !ok {
		return sqlShape{}, false
	}
	write := p.locksRows()
	var sh sqlShape
	joined := false
	for _, t := range p.toks {
		if t.is("join") {
			joined = true
		}
	}
	for _, t := range uniq(tables) {
		a := access{table: t, write: write}
		if len(tables) == 1 && !joined && !p.subqueries() {
			a.keys = p.whereKeys(p.find("where", 0))
		}
		sh.acc = append(sh.acc, a)
	}
	return sh, true
}

func (p *sqlParser) insertShape() (sqlShape, bool) {
	into := p.find("into", 0)
	if into < 0 || into+1 >= len(p.toks) || p.toks[into+1].kind != tIdent {
		return sqlShape{}, false
	}
	table, next := p.qualified(into + 1)
	replace := p.toks[0].is("replace")
	for i := 0; i+1 < len(p.toks) && i < into; i++ {
		if p.toks[i].is("or") && p.toks[i+1].is("replace") {
			replace = true
		}
	}
	upsert := false
	for i := 0; i+1 < len(p.toks); i++ {
		if p.toks[i].is("do") && p.toks[i+1].is("update") {
			upsert = true
		}
	}
	reads, ok := p.readTables("")
	if !ok {
		return sqlShape{}, false
	}
	a := access{table: table, write: true}
	if !replace && !upsert && !p.subqueries() {
		a.keys = p.insertKeys(next)
	}
	sh := sqlShape{acc: []access{a}}
	for _, t := range uniq(reads) {
		sh.acc = append(sh.acc, access{table: t})
	}
	return sh, true
}

// insertKeys reads "(c1, c2) VALUES (v1, v2)" at i into equalities.
func (p *sqlParser) insertKeys(i int) []colValue {
	if i >= len(p.toks) || p.toks[i].text != "(" {
		return nil
	}
	var cols []string
	j := i + 1
	for ; j < len(p.toks) && p.toks[j].text != ")"; j++ {
		if p.toks[j].kind == tIdent {
			cols = append(cols, p.toks[j].text)
		} else if p.toks[j].text != "," {
			return nil
		}
	}
	j++
	if j >= len(p.toks) || !p.toks[j].is("values") || j+1 >= len(p.toks) || p.toks[j+1].text != "(" {
		return nil
	}
	var vals [][]int // token indexes of each value
	depth := 0
	cur := []int{}
	k := j + 2
	for ; k < len(p.toks); k++ {
		t := p.toks[k]
		if t.kind == tPunct && t.text == "(" {
			depth++
		}
		if t.kind == tPunct && t.text == ")" {
			if depth == 0 {
				vals = append(vals, cur)
				break
			}
			depth--
		}
		if depth == 0 && t.kind == tPunct && t.text == "," {
			vals = append(vals, cur)
			cur = []int{}
			continue
		}
		cur = append(cur, k)
	}
	// A second row of values: no keys.
	if k+1 < len(p.toks) && p.toks[k+1].text == "," {
		return nil
	}
	if len(vals) != len(cols) {
		return nil
	}
	var out []colValue
	for n, v := range vals {
		if len(v) != 1 {
			continue
		}
		if val, ok := p.value(v[0]); ok {
			out = append(out, colValue{cols[n], val})
		}
	}
	return out
}

func (p *sqlParser) updateShape() (sqlShape, bool) {
	i := 1
	if i+1 < len(p.toks) && p.toks[i].is("or") {
		i += 2
	}
	if i >= len(p.toks) || p.toks[i].kind != tIdent {
		return sqlShape{}, false
	}
	table, next := p.qualified(i)
	set := p.find("set", next)
	if set < 0 {
		return sqlShape{}, false
	}
	where := p.find("where", set)
	end := where
	if end < 0 {
		end = len(p.toks)
	}
	assigned := map[string]bool{}
	depth := 0
	start := true
	for k := set + 1; k < end; k++ {
		t := p.toks[k]
		switch {
		case t.kind == tPunct && t.text == "(":
			if start {
				// (a, b) = (...): every name inside is assigned.
				for m := k + 1; m < end && p.toks[m].text != ")"; m++ {
					if p.toks[m].kind == tIdent {
						assigned[p.toks[m].text] = true
					}
				}
			}
			depth++
		case t.kind == tPunct && t.text == ")":
			depth--
		case depth == 0 && t.kind == tPunct && t.text == ",":
			start = true
			continue
		case start && t.kind == tIdent:
			name, _ := p.qualified(k)
			assigned[name] = true
		case depth == 0 && (t.is("from") || t.is("returning")):
			k = end
		}
		start = false
	}
	reads, ok := p.readTables("")
	if !ok {
		return sqlShape{}, false
	}
	a := access{table: table, write: true}
	if !p.subqueries() {
		keys := p.whereKeys(where)
		for _, k := range keys {
			if assigned[k.col] {
				keys = nil
				break
			}
		}
		a.keys = keys
	}
	sh := sqlShape{acc: []access{a}}
	for _, t := range uniq(reads) {
		sh.acc = append(sh.acc, access{table: t})
	}
	return sh, true
}

func (p *sqlParser) deleteShape() (sqlShape, bool) {
	from := p.find("from", 0)
	if from != 1 || from+1 >= len(p.toks) || p.toks[from+1].kind != tIdent {
		return sqlShape{}, false
	}
	table, _ := p.qualified(from + 1)
	reads, ok := p.readTables(table)
	if !ok {
		return sqlShape{}, false
	}
	a := access{table: table, write: true}
	if !p.subqueries() && len(reads) == 0 {
		a.keys = p.whereKeys(p.find("where", from))
	}
	sh := sqlShape{acc: []access{a}}
	for _, t := range uniq(reads) {
		sh.acc = append(sh.acc, access{table: t})
	}
	return sh, true
}

// find returns the index of the first word at depth 0 from i, or -1.
func (p *sqlParser) find(word string, i int) int {
	depth := 0
	for k := max(i, 0); k < len(p.toks); k++ {
		t := p.toks[k]
		switch {
		case t.kind == tPunct && t.text == "(":
			depth++
		case t.kind == tPunct && t.text == ")":
			depth--
		case depth == 0 && t.is(word):
			return k
		}
	}
	return -1
}

// whereKeys reads the equalities of a WHERE clause at i that is a chain of
// conjuncts at depth 0: each conjunct "column = value" (or "value =
// column") is one; others restrict further and are left out. A clause
// with an OR at depth 0 gives none.
func (p *sqlParser) whereKeys(where int) []colValue {
	if where < 0 {
		return nil
	}
	var conj [][]int
	cur := []int{}
	depth := 0
	for k := where + 1; k < len(p.toks); k++ {
		t := p.toks[k]
		if depth == 0 && t.kind == tIdent {
			switch t.text {
			case "or":
				return nil
			case "group", "order", "limit", "returning", "window", "having", "union", "except", "intersect", "for", "on":
				k = len(p.toks)
				continue
			case "and":
				conj = append(conj, cur)
				cur = []int{}
				continue
			}
		}
		if depth == 0 && t.kind == tPunct && t.text == ";" {
			break
		}
		if t.kind == tPunct && t.text == "(" {
			depth++
		}
		if t.kind == tPunct && t.text == ")" {
			depth--
		}
		cur = append(cur, k)
	}
	conj = append(conj, cur)
	var out []colValue
	for _, c := range conj {
		col, val, ok := p.equality(c)
		if ok {
			out = append(out, colValue{col, val})
		}
	}
	return out
}

// equality reads "col = value", "t.col = value" or "value = col".
func (p *sqlParser) equality(c []int) (string, string, bool) {
	eq := -1
	for n, k := range c {
		if p.toks[k].kind == tPunct && (p.toks[k].text == "=" || p.toks[k].text == "==") {
			if eq >= 0 {
				return "", "", false
			}
			eq = n
		}
	}
	if eq < 0 {
		return "", "", false
	}
	left, right := c[:eq], c[eq+1:]
	col := func(side []int) (string, bool) {
		switch {
		case len(side) == 1 && p.toks[side[0]].kind == tIdent:
			return p.toks[side[0]].text, true
		case len(side) == 3 && p.toks[side[0]].kind == tIdent && p.toks[side[1]].text == "." && p.toks[side[2]].kind == tIdent:
			return p.toks[side[2]].text, true
		}
		return "", false
	}
	if name, ok := col(left); ok && len(right) == 1 {
		if v, ok := p.value(right[0]); ok {
			return name, v, true
		}
	}
	if name, ok := col(right); ok && len(left) == 1 {
		if v, ok := p.value(left[0]); ok {
			return name, v, true
		}
	}
	return "", "", false
}

// value is the canonical value of a literal or a parameter at token k.
func (p *sqlParser) value(k int) (string, bool) {
	t := p.toks[k]
	switch t.kind {
	case tString:
		return canonString(t.text), true
	case tNumber:
		if n, err := strconv.ParseInt(t.text, 10, 64); err == nil {
			return "i:" + strconv.FormatInt(n, 10), true
		}
		if f, err := strconv.ParseFloat(t.text, 64); err == nil {
			return canon(f)
		}
	case tParam:
		return p.param(k)
	}
	return "", false
}

// param resolves the parameter at token k to its argument.
func (p *sqlParser) param(k int) (string, bool) {
	text := p.toks[k].text
	ordinal := 0
	name := ""
	switch {
	case text == "?":
		ordinal = p.ordinals[k]
	case text[0] == '$' || text[0] == '?':
		n, err := strconv.Atoi(text[1:])
		if err != nil {
			name = text[1:]
		} else {
			ordinal = n
		}
	default:
		name = text[1:]
	}
	for _, a := range p.args {
		if (ordinal > 0 && a.Ordinal == ordinal && a.Name == "") || (name != "" && strings.EqualFold(a.Name, name)) {
			return canon(a.Value)
		}
	}
	return "", false
}

// canon renders a value so that two values of one type are equal exactly
// when the database would compare them equal, as far as can be told:
// text is compared without case and trailing spaces (a NOCASE or RTRIM
// collation would), numbers exactly. ok is false for NULL and the
// unknown.
func canon(v any) (string, bool) {
	switch v := v.(type) {
	case string:
		return canonString(v), true
	case []byte:
		return canonString(string(v)), true
	case int64:
		return "i:" + strconv.FormatInt(v, 10), true
	case int:
		return "i:" + strconv.Itoa(v), true
	case int32:
		return "i:" + strconv.FormatInt(int64(v), 10), true
	case float64:
		if v == float64(int64(v)) {
			return "i:" + strconv.FormatInt(int64(v), 10), true
		}
		return "f:" + strconv.FormatFloat(v, 'g', -1, 64), true
	case bool:
		if v {
			return "i:1", true
		}
		return "i:0", true
	case time.Time:
		return "t:" + v.UTC().Format(time.RFC3339Nano), true
	}
	return "", false
}

func canonString(s string) string { return "s:" + strings.ToLower(strings.TrimRight(s, " ")) }

func uniq(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return slices.Compact(s)
}
