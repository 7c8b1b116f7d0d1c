// Package sqlscan is the project's one SQL scanner: it splits a script into
// statements and a statement into tokens, knowing the quoting of SQLite,
// PostgreSQL and MySQL alike: '...' with doubled quotes (E'...' with
// backslash escapes), "...", `...` and [...] identifiers, -- and /* */
// comments (nested, as PostgreSQL has them), and PostgreSQL's dollar
// quotes ($$ ... $$, $tag$ ... $tag$). The harness reads a team's schema,
// rewrites its statements onto the scenario's clock and derives what a
// statement touches from the same tokens, so that the three never disagree
// about where a string or a comment ends.
//
// Lex is lossless: joining the texts of its tokens gives the input back.
package sqlscan

import (
	"strings"
	"unicode/utf8"
)

// Kind is the kind of a token.
type Kind int

// The kinds of tokens.
const (
	Space     Kind = iota // white space and comments
	Word                  // an identifier or a keyword, unquoted
	Quoted                // a quoted identifier: "x", `x`, [x]
	String                // a string literal: 'x', E'x'
	Dollar                // a dollar-quoted string: $tag$ ... $tag$
	Number                // a numeric literal: 12, 1.5, 1e3
	Param                 // a parameter: $1, ?, ?2, :name, @name
	LParen                // (
	RParen                // )
	Comma                 // ,
	Dot                   // .
	Cast                  // :: (PostgreSQL)
	Semicolon             // ;
	Op                    // an operator: =, <=, <>, ||, ...
)

// Token is one token of a statement: its kind and its text as written.
type Token struct {
	Kind Kind
	Text string
}

// Is reports whether t is the unquoted word w, whatever its case.
func (t Token) Is(w string) bool { return t.Kind == Word && strings.EqualFold(t.Text, w) }

// Ident is the name an identifier token stands for: a word lower-cased
// (SQL folds unquoted names), a quoted identifier without its quotes.
func (t Token) Ident() string {
	switch t.Kind {
	case Word:
		return strings.ToLower(t.Text)
	case Quoted:
		if len(t.Text) < 2 {
			return ""
		}
		inner := t.Text[1 : len(t.Text)-1]
		if t.Text[0] == '"' {
			return strings.ReplaceAll(inner, `""`, `"`)
		}
		if t.Text[0] == '`' {
			return strings.ReplaceAll(inner, "``", "`")
		}
		return inner
	}
	return ""
}

// Value is the content of a string literal, quotes removed and doubled
// quotes undone, or the body of a dollar-quoted string ("" for any other
// token).
func (t Token) Value() string {
	switch t.Kind {
	case String:
		s := t.Text
		escapes := false
		if len(s) > 0 && (s[0] == 'E' || s[0] == 'e') {
			s, escapes = s[1:], true
		}
		if len(s) < 2 {
			return ""
		}
		s = strings.ReplaceAll(s[1:len(s)-1], "''", "'")
		if escapes {
			s = strings.ReplaceAll(s, `\'`, `'`)
		}
		return s
	case Dollar:
		tag := DollarTag(t.Text)
		if len(t.Text) < 2*len(tag) {
			return ""
		}
		return t.Text[len(tag) : len(t.Text)-len(tag)]
	}
	return ""
}

// Lex splits a statement (or a script) into tokens; joining their texts
// gives it back unchanged. complete is false when a quote or a comment is
// not closed: it then runs to the end.
func Lex(s string) (toks []Token, complete bool) {
	complete = true
	i := 0
	for i < len(s) {
		c := s[i]
		start := i
		var k Kind
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v':
			for i < len(s) && strings.IndexByte(" \t\n\r\f\v", s[i]) >= 0 {
				i++
			}
			k = Space
		case c == '-' && i+1 < len(s) && s[i+1] == '-':
			for i < len(s) && s[i] != '\n' {
				i++
			}
			k = Space
		case c == '/' && i+1 < len(s) && s[i+1] == '*':
			depth, closed := 0, false
			for i < len(s) && !closed {
				switch {
				case strings.HasPrefix(s[i:], "/*"):
					depth++
					i += 2
				case strings.HasPrefix(s[i:], "*/"):
					depth--
					i += 2
					closed = depth == 0
				default:
					i++
				}
			}
			complete = complete && closed
			k = Space
		case (c == 'E' || c == 'e') && i+1 < len(s) && s[i+1] == '\'':
			var ok bool
			i, ok = endQuote(s, i+1, '\'', true)
			complete = complete && ok
			k = String
		case c == '\'':
			var ok bool
			i, ok = endQuote(s, i, '\'', false)
			complete = complete && ok
			k = String
		case c == '"' || c == '`':
			var ok bool
			i, ok = endQuote(s, i, c, false)
			complete = complete && ok
			k = Quoted
		case c == '[':
			if j := strings.IndexByte(s[i:], ']'); j >= 0 {
				i += j + 1
			} else {
				i, complete = len(s), false
			}
			k = Quoted
		case c == '$' && DollarTag(s[i:]) != "":
			tag := DollarTag(s[i:])
			if j := strings.Index(s[i+len(tag):], tag); j >= 0 {
				i += len(tag) + j + len(tag)
			} else {
				i, complete = len(s), false
			}
			k = Dollar
		case isWordStart(c):
			for i < len(s) && isWordPart(s[i]) {
				i++
			}
			k = Word
		case isDigit(c) || (c == '.' && i+1 < len(s) && isDigit(s[i+1])):
			for i < len(s) && (isDigit(s[i]) || s[i] == '.' || s[i] == 'e' || s[i] == 'E' ||
				((s[i] == '+' || s[i] == '-') && i > start && (s[i-1] == 'e' || s[i-1] == 'E'))) {
				i++
			}
			k = Number
		case c == '(':
			i++
			k = LParen
		case c == ')':
			i++
			k = RParen
		case c == ',':
			i++
			k = Comma
		case c == '.':
			i++
			k = Dot
		case c == ';':
			i++
			k = Semicolon
		case c == ':' && i+1 < len(s) && s[i+1] == ':':
			i += 2
			k = Cast
		case c == '$' || c == '?' || c == ':' || c == '@':
			i++
			for i < len(s) && (isWordPart(s[i]) && s[i] != '$') {
				i++
			}
			if i == start+1 && c != '?' {
				k = Op // a lone sign
			} else {
				k = Param
			}
		default:
			k = Op
			two := ""
			if i+1 < len(s) {
				two = s[i : i+2]
			}
			switch two {
			case "<=", ">=", "<>", "!=", "==", "||", "->", "<<", ">>":
				i += 2
			default:
				i++
			}
		}
		toks = append(toks, Token{Kind: k, Text: s[start:i]})
	}
	return toks, complete
}

// Split splits a script into its statements at the semicolons outside
// quotes, comments and dollar-quoted bodies, and outside the BEGIN ... END
// body of a trigger (SQLite's CREATE TRIGGER, PostgreSQL's BEGIN ATOMIC),
// whose statements end in semicolons of their own. Each statement is
// returned trimmed, without its semicolon; statements made of nothing but
// white space and comments are dropped.
func Split(script string) []string {
	toks, _ := Lex(script)
	var out []string
	from := 0
	depth := 0 // BEGIN ... END and CASE ... END inside a trigger's body
	body := false
	words := 0 // the statement's words so far, to recognise its start
	trigger := false
	flush := func(to int) {
		var b strings.Builder
		meaningful := false
		for _, t := range toks[from:to] {
			b.WriteString(t.Text)
			meaningful = meaningful || t.Kind != Space
		}
		if meaningful {
			out = append(out, strings.TrimSpace(b.String()))
		}
	}
	for i, t := range toks {
		switch t.Kind {
		case Word:
			words++
			if words <= 4 && t.Is("trigger") {
				trigger = true // CREATE [TEMP] TRIGGER
			}
			switch {
			case t.Is("begin") && (trigger || atomicNext(toks, i)):
				body = true
				depth++
			case body && t.Is("case"):
				depth++
			case body && t.Is("end"):
				if depth--; depth == 0 {
					body = false
				}
			}
		case Semicolon:
			if body {
				continue
			}
			flush(i)
			from, words, trigger = i+1, 0, false
		}
	}
	flush(len(toks))
	return out
}

// atomicNext reports whether the word after toks[i] is ATOMIC (a
// PostgreSQL BEGIN ATOMIC body).
func atomicNext(toks []Token, i int) bool {
	j := Next(toks, i+1)
	return j < len(toks) && toks[j].Is("atomic")
}

// Next returns the index of the first token at or after i that is not
// space, or len(ts).
func Next(ts []Token, i int) int {
	for i < len(ts) && ts[i].Kind == Space {
		i++
	}
	return i
}

// Prev returns the index of the last token before i that is not space, or
// -1.
func Prev(ts []Token, i int) int {
	for i--; i >= 0 && ts[i].Kind == Space; i-- {
	}
	return i
}

// Significant lexes s and keeps the tokens that say something: white
// space and comments dropped.
func Significant(s string) []Token {
	toks, _ := Lex(s)
	out := toks[:0]
	for _, t := range toks {
		if t.Kind != Space {
			out = append(out, t)
		}
	}
	return out
}

// Closing returns the index of the parenthesis that closes the one at
// ts[open], or len(ts) when none does.
func Closing(ts []Token, open int) int {
	depth := 0
	for i := open; i < len(ts); i++ {
		switch ts[i].Kind {
		case LParen:
			depth++
		case RParen:
			if depth--; depth == 0 {
				return i
			}
		}
	}
	return len(ts)
}

// Args returns the token ranges [from, to) of the top-level arguments of
// the call whose parenthesis opens at ts[open] and closes at ts[end]
// (see Closing); an empty argument list has none.
func Args(ts []Token, open, end int) [][2]int {
	var out [][2]int
	from, depth := open+1, 0
	for i := open + 1; i < end; i++ {
		switch ts[i].Kind {
		case LParen:
			depth++
		case RParen:
			depth--
		case Comma:
			if depth == 0 {
				out = append(out, [2]int{from, i})
				from = i + 1
			}
		}
	}
	if Next(ts, from) < end || len(out) > 0 {
		out = append(out, [2]int{from, end})
	}
	return out
}

// Join puts tokens back together.
func Join(ts []Token) string {
	var b strings.Builder
	for _, t := range ts {
		b.WriteString(t.Text)
	}
	return b.String()
}

// Short renders a statement on one line for a message: its comments
// dropped (once on one line, a -- comment would seem to run over what
// follows it), its white space folded, and, when that is longer than n
// bytes, cut to n with "..." at the end, never inside a character.
func Short(q string, n int) string {
	toks, _ := Lex(q)
	var b strings.Builder
	for _, t := range toks {
		if t.Kind == Space {
			b.WriteByte(' ')
		} else {
			b.WriteString(t.Text)
		}
	}
	s := strings.Join(strings.Fields(b.String()), " ")
	if len(s) <= n {
		return s
	}
	cut := max(n-3, 0)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "..."
}

// endQuote returns the index just past the quote that closes the one at
// s[i], and whether one does; a doubled quote is part of the text, and so
// is a backslashed one when backslash is set.
func endQuote(s string, i int, q byte, backslash bool) (int, bool) {
	for i++; i < len(s); i++ {
		switch {
		case backslash && s[i] == '\\':
			i++
		case s[i] == q:
			if i+1 < len(s) && s[i+1] == q {
				i++
				continue
			}
			return i + 1, true
		}
	}
	return len(s), false
}

// DollarTag returns the $tag$ that opens s, or "".
func DollarTag(s string) string {
	if len(s) == 0 || s[0] != '$' {
		return ""
	}
	for i := 1; i < len(s); i++ {
		switch c := s[i]; {
		case c == '$':
			return s[:i+1]
		case isWordPart(c) && c != '$' && !(i == 1 && isDigit(c)):
		default:
			return ""
		}
	}
	return ""
}

func isWordStart(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= 0x80
}

func isWordPart(c byte) bool { return isWordStart(c) || isDigit(c) || c == '$' }

func isDigit(c byte) bool { return c >= '0' && c <= '9' }
