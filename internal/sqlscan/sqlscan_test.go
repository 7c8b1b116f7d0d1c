package sqlscan

import (
	"slices"
	"testing"

	"pgregory.net/rapid"
)

func TestSplitKeepsWhatIsQuotedCommentedOrABody(t *testing.T) {
	cases := []struct {
		name   string
		script string
		want   []string
	}{
		{"plain", "CREATE TABLE a (x INT); CREATE TABLE b (y INT);", []string{"CREATE TABLE a (x INT)", "CREATE TABLE b (y INT)"}},
		{"semicolon in a string", "INSERT INTO a VALUES ('x;y'); SELECT 1", []string{"INSERT INTO a VALUES ('x;y')", "SELECT 1"}},
		{"doubled quote", "INSERT INTO a VALUES ('it''s; here');", []string{"INSERT INTO a VALUES ('it''s; here')"}},
		{"semicolon in a line comment", "CREATE TABLE a (x INT); -- a; b\nCREATE TABLE b (y INT)", []string{"CREATE TABLE a (x INT)", "-- a; b\nCREATE TABLE b (y INT)"}},
		{"quote in a line comment", "-- don't split here\nCREATE TABLE a (x INT); CREATE TABLE b (y INT)", []string{"-- don't split here\nCREATE TABLE a (x INT)", "CREATE TABLE b (y INT)"}},
		{"block comment", "/* one; two 'three */ CREATE TABLE a (x INT); SELECT 1", []string{"/* one; two 'three */ CREATE TABLE a (x INT)", "SELECT 1"}},
		{"nested block comment", "/* a /* b; */ c; */ SELECT 1; SELECT 2", []string{"/* a /* b; */ c; */ SELECT 1", "SELECT 2"}},
		{"comment-only statement dropped", "SELECT 1; -- the end\n", []string{"SELECT 1"}},
		{"empty statements dropped", ";;SELECT 1;;", []string{"SELECT 1"}},
		{"quoted identifier", `CREATE TABLE "a;b" (x INT); SELECT 1`, []string{`CREATE TABLE "a;b" (x INT)`, "SELECT 1"}},
		{"dollar-quoted body", "CREATE FUNCTION f() RETURNS trigger AS $$ BEGIN NEW.x := 1; RETURN NEW; END; $$ LANGUAGE plpgsql; SELECT 1",
			[]string{"CREATE FUNCTION f() RETURNS trigger AS $$ BEGIN NEW.x := 1; RETURN NEW; END; $$ LANGUAGE plpgsql", "SELECT 1"}},
		{"tagged dollar quote", "DO $body$ BEGIN PERFORM 1; $$ not the end $$; END $body$; SELECT 2",
			[]string{"DO $body$ BEGIN PERFORM 1; $$ not the end $$; END $body$", "SELECT 2"}},
		{"sqlite trigger", "CREATE TRIGGER t AFTER INSERT ON a BEGIN INSERT INTO b VALUES (1); UPDATE c SET n = CASE WHEN n > 0 THEN 1 ELSE 2 END; END; SELECT 1",
			[]string{"CREATE TRIGGER t AFTER INSERT ON a BEGIN INSERT INTO b VALUES (1); UPDATE c SET n = CASE WHEN n > 0 THEN 1 ELSE 2 END; END", "SELECT 1"}},
		{"begin atomic", "CREATE FUNCTION f() RETURNS int LANGUAGE sql BEGIN ATOMIC SELECT 1; SELECT 2; END; SELECT 3",
			[]string{"CREATE FUNCTION f() RETURNS int LANGUAGE sql BEGIN ATOMIC SELECT 1; SELECT 2; END", "SELECT 3"}},
		{"a transaction is not a body", "BEGIN; INSERT INTO a VALUES (1); COMMIT", []string{"BEGIN", "INSERT INTO a VALUES (1)", "COMMIT"}},
		{"escape string", `INSERT INTO a VALUES (E'x\';y'); SELECT 1`, []string{`INSERT INTO a VALUES (E'x\';y')`, "SELECT 1"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := Split(c.script); !slices.Equal(got, c.want) {
				t.Errorf("Split(%q)\n got %q\nwant %q", c.script, got, c.want)
			}
		})
	}
}

func TestLexGivesTheStatementBack(t *testing.T) {
	for _, q := range []string{
		"SELECT 'it''s', \"a\"\"b\", `c`, [d e], E'x\\'y', $$ a ; b $$, $fn$ body $fn$, 1.5e3, $1, ?, :name -- end\nFROM t /* a /* nested */ comment */ WHERE x::int >= -1",
		"unterminated 'string", "unterminated /* comment", "$$ unterminated",
	} {
		toks, _ := Lex(q)
		if got := Join(toks); got != q {
			t.Errorf("Lex(%q) joins to %q", q, got)
		}
	}
}

func TestLexIsLossless(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s := rapid.StringOfN(rapid.SampledFrom([]rune("ab $1?:@'\"`[];()-/*.,=<>E\n\t0$$")), 0, 60, -1).Draw(t, "s")
		toks, _ := Lex(s)
		if got := Join(toks); got != s {
			t.Fatalf("Join(Lex(%q)) = %q", s, got)
		}
		for _, tok := range toks {
			if tok.Text == "" {
				t.Fatalf("Lex(%q) made an empty token", s)
			}
		}
	})
}

func TestLexKinds(t *testing.T) {
	toks, complete := Lex(`SELECT "A", x::text, $1, ?, :n, 1.5e3 FROM t WHERE y <= 'q' -- c`)
	if !complete {
		t.Fatal("complete statement read as incomplete")
	}
	var kinds []Kind
	for _, tok := range toks {
		if tok.Kind != Space {
			kinds = append(kinds, tok.Kind)
		}
	}
	want := []Kind{Word, Quoted, Comma, Word, Cast, Word, Comma, Param, Comma, Param, Comma, Param, Comma, Number, Word, Word, Word, Word, Op, String}
	if !slices.Equal(kinds, want) {
		t.Errorf("kinds %v, want %v", kinds, want)
	}
	for _, s := range []string{"SELECT 'open", "SELECT /* open", `SELECT "open`, "SELECT $$ open", "SELECT [open"} {
		if _, complete := Lex(s); complete {
			t.Errorf("Lex(%q) says complete", s)
		}
	}
}

func TestValueAndIdent(t *testing.T) {
	for _, c := range []struct{ text, value string }{{"'it''s'", "it's"}, {`E'a\'b'`, "a'b"}, {"$$ x $$", " x "}, {"$t$y$t$", "y"}} {
		toks, _ := Lex(c.text)
		if len(toks) != 1 || toks[0].Value() != c.value {
			t.Errorf("Value of %q = %q, want %q (tokens %v)", c.text, toks[0].Value(), c.value, toks)
		}
	}
	for _, c := range []struct{ text, ident string }{{"Ledger", "ledger"}, {`"Ledger"`, "Ledger"}, {"`a``b`", "a`b"}, {"[x y]", "x y"}} {
		toks, _ := Lex(c.text)
		if len(toks) != 1 || toks[0].Ident() != c.ident {
			t.Errorf("Ident of %q = %q, want %q", c.text, toks[0].Ident(), c.ident)
		}
	}
}

func TestSignificantDropsSpaceAndComments(t *testing.T) {
	var got []string
	for _, tok := range Significant("/* a */ PRAGMA -- b\n user_version = 'x -- y';") {
		got = append(got, tok.Text)
	}
	if want := []string{"PRAGMA", "user_version", "=", "'x -- y'", ";"}; !slices.Equal(got, want) {
		t.Errorf("Significant: %q, want %q", got, want)
	}
}

func TestClosingAndArgs(t *testing.T) {
	toks, _ := Lex("f(a, g(b, c), 'x,)' , (d)) tail")
	open := Next(toks, 1)
	end := Closing(toks, open)
	if toks[end].Kind != RParen || Join(toks[end+1:]) != " tail" {
		t.Fatalf("Closing found %d: %q", end, Join(toks[end:]))
	}
	var args []string
	for _, a := range Args(toks, open, end) {
		args = append(args, Join(toks[a[0]:a[1]]))
	}
	if want := []string{"a", " g(b, c)", " 'x,)' ", " (d)"}; !slices.Equal(args, want) {
		t.Errorf("Args: %q, want %q", args, want)
	}
	toks, _ = Lex("f( ) g(")
	if end := Closing(toks, 1); end != 3 || len(Args(toks, 1, end)) != 0 {
		t.Errorf("f( ): closing %d, args %v; want 3 and none", end, Args(toks, 1, end))
	}
	if end := Closing(toks, 6); end != len(toks) {
		t.Errorf("an unclosed parenthesis closes at %d, want %d", end, len(toks))
	}
}

func TestShort(t *testing.T) {
	for _, c := range []struct {
		q    string
		n    int
		want string
	}{
		{"SELECT f(x)\n  FROM t -- the ledger\n WHERE a = '--'", 100, "SELECT f(x) FROM t WHERE a = '--'"},
		{"SELECT /* why */ 1", 100, "SELECT 1"},
		{"SELECT 123456789", 10, "SELECT ..."},
		{"SELECT 'ééé'", 12, "SELECT '..."},
		{"SELECT 'ééé'", 13, "SELECT 'é..."},
		{"SELECT 1", 8, "SELECT 1"},
	} {
		if got := Short(c.q, c.n); got != c.want {
			t.Errorf("Short(%q, %d) = %q, want %q", c.q, c.n, got, c.want)
		}
	}
}
