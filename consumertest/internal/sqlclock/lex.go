package sqlclock

import "strings"

// kind is the kind of a token.
type kind int

const (
	space  kind = iota // white space and comments
	word               // an identifier or a keyword, unquoted
	quoted             // a quoted identifier: "x", `x`, [x]
	str                // a string literal: 'x', E'x', $$x$$
	dollar             // a dollar-quoted string: $tag$ ... $tag$
	lparen             // (
	rparen             // )
	comma              // ,
	dot                // .
	cast               // :: (PostgreSQL)
	other              // anything else: numbers, operators, parameters
)

// token is one token of a statement: its kind and its text.
type token struct {
	kind kind
	text string
}

// value is the content of a string literal, quotes removed and doubled
// quotes undone ("" for any other token).
func (t token) value() string {
	if t.kind != str {
		return ""
	}
	s := t.text
	if len(s) > 0 && (s[0] == 'E' || s[0] == 'e') {
		s = s[1:]
	}
	if len(s) < 2 {
		return ""
	}
	return strings.ReplaceAll(s[1:len(s)-1], "''", "'")
}

// is reports whether t is the word w, whatever its case.
func (t token) is(w string) bool { return t.kind == word && strings.EqualFold(t.text, w) }

// lex splits a statement into tokens; joining their texts gives it back
// unchanged. It knows the quoting of both dialects: '...' with doubled
// quotes (and E'...' with backslash escapes), "..." and `...` and [...]
// identifiers, -- and /* */ comments (nested, as PostgreSQL has them),
// and PostgreSQL's $tag$ ... $tag$. An unterminated quote or comment runs
// to the end.
func lex(s string) []token {
	var out []token
	i := 0
	for i < len(s) {
		c := s[i]
		start := i
		k := other
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f':
			for i < len(s) && strings.IndexByte(" \t\n\r\f", s[i]) >= 0 {
				i++
			}
			k = space
		case c == '-' && i+1 < len(s) && s[i+1] == '-':
			for i < len(s) && s[i] != '\n' {
				i++
			}
			k = space
		case c == '/' && i+1 < len(s) && s[i+1] == '*':
			depth := 0
			for i < len(s) {
				if strings.HasPrefix(s[i:], "/*") {
					depth++
					i += 2
				} else if strings.HasPrefix(s[i:], "*/") {
					depth--
					i += 2
					if depth == 0 {
						break
					}
				} else {
					i++
				}
			}
			k = space
		case (c == 'E' || c == 'e') && i+1 < len(s) && s[i+1] == '\'':
			i = endQuote(s, i+1, '\'', true)
			k = str
		case c == '\'':
			i = endQuote(s, i, '\'', false)
			k = str
		case c == '"' || c == '`':
			i = endQuote(s, i, c, false)
			k = quoted
		case c == '[':
			if j := strings.IndexByte(s[i:], ']'); j >= 0 {
				i += j + 1
			} else {
				i = len(s)
			}
			k = quoted
		case c == '$' && dollarTag(s[i:]) != "":
			tag := dollarTag(s[i:])
			if j := strings.Index(s[i+len(tag):], tag); j >= 0 {
				i += len(tag) + j + len(tag)
			} else {
				i = len(s)
			}
			k = dollar
		case isWordStart(c):
			for i < len(s) && isWordPart(s[i]) {
				i++
			}
			k = word
		case c == '(':
			i++
			k = lparen
		case c == ')':
			i++
			k = rparen
		case c == ',':
			i++
			k = comma
		case c == '.' && !(i+1 < len(s) && s[i+1] >= '0' && s[i+1] <= '9'):
			i++
			k = dot
		case c == ':' && i+1 < len(s) && s[i+1] == ':':
			i += 2
			k = cast
		case c >= '0' && c <= '9' || c == '.':
			for i < len(s) && (isWordPart(s[i]) || s[i] == '.') {
				i++
			}
		default: // an operator or a parameter's sign, a character at a time
			i++
		}
		out = append(out, token{kind: k, text: s[start:i]})
	}
	return out
}

// endQuote returns the index just past the quote that closes the one at
// s[i]; a doubled quote is part of the text, and so is a backslashed one
// when backslash is set.
func endQuote(s string, i int, q byte, backslash bool) int {
	for i++; i < len(s); i++ {
		switch {
		case backslash && s[i] == '\\':
			i++
		case s[i] == q:
			if i+1 < len(s) && s[i+1] == q {
				i++
				continue
			}
			return i + 1
		}
	}
	return len(s)
}

// dollarTag returns the $tag$ that opens s, or "".
func dollarTag(s string) string {
	for i := 1; i < len(s); i++ {
		switch c := s[i]; {
		case c == '$':
			return s[:i+1]
		case isWordPart(c) && !(i == 1 && c >= '0' && c <= '9'):
		default:
			return ""
		}
	}
	return ""
}

func isWordStart(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= 0x80
}

func isWordPart(c byte) bool { return isWordStart(c) || c >= '0' && c <= '9' || c == '$' }

// join puts tokens back together.
func join(ts []token) string {
	var b strings.Builder
	for _, t := range ts {
		b.WriteString(t.text)
	}
	return b.String()
}

// next returns the index of the first token at or after i that is not
// space, or len(ts).
func next(ts []token, i int) int {
	for i < len(ts) && ts[i].kind == space {
		i++
	}
	return i
}

// prev returns the index of the last token before i that is not space,
// or -1.
func prev(ts []token, i int) int {
	for i--; i >= 0 && ts[i].kind == space; i-- {
	}
	return i
}

// closing returns the index of the parenthesis that closes the one at
// ts[open], or len(ts).
func closing(ts []token, open int) int {
	depth := 0
	for i := open; i < len(ts); i++ {
		switch ts[i].kind {
		case lparen:
			depth++
		case rparen:
			if depth--; depth == 0 {
				return i
			}
		}
	}
	return len(ts)
}

// args returns the token ranges [from, to) of the top-level arguments of
// the call whose parenthesis opens at ts[open] and closes at ts[end]; an
// empty argument list has none.
func args(ts []token, open, end int) [][2]int {
	var out [][2]int
	from, depth := open+1, 0
	for i := open + 1; i < end; i++ {
		switch ts[i].kind {
		case lparen:
			depth++
		case rparen:
			depth--
		case comma:
			if depth == 0 {
				out = append(out, [2]int{from, i})
				from = i + 1
			}
		}
	}
	if next(ts, from) < end || len(out) > 0 {
		out = append(out, [2]int{from, end})
	}
	return out
}
