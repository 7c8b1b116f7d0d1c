package sqlclock

import "github.com/idemcheck/idemcheck/internal/sqlscan"

// The clock rewrite reads statements with the project's one SQL scanner
// (internal/sqlscan), so that it agrees with the schema splitter and the
// model checker about where a string, a comment or a body ends.

type token = sqlscan.Token

const (
	space  = sqlscan.Space
	word   = sqlscan.Word
	str    = sqlscan.String
	dollar = sqlscan.Dollar
	lparen = sqlscan.LParen
	rparen = sqlscan.RParen
	comma  = sqlscan.Comma
	dot    = sqlscan.Dot
	cast   = sqlscan.Cast
)

// lex splits a statement into tokens; joining their texts gives it back
// unchanged. An unterminated quote or comment runs to the end.
func lex(s string) []token {
	ts, _ := sqlscan.Lex(s)
	return ts
}

func dollarTag(s string) string { return sqlscan.DollarTag(s) }

func join(ts []token) string { return sqlscan.Join(ts) }

func next(ts []token, i int) int { return sqlscan.Next(ts, i) }

func prev(ts []token, i int) int { return sqlscan.Prev(ts, i) }

// closing returns the index of the parenthesis that closes the one at
// ts[open], or len(ts).
func closing(ts []token, open int) int {
	depth := 0
	for i := open; i < len(ts); i++ {
		switch ts[i].Kind {
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
		switch ts[i].Kind {
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
