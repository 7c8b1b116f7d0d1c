package backend

import (
	"fmt"
	"strings"

	"github.com/idemcheck/idemcheck/internal/sqlscan"
)

// Refused is the error of a statement the PostgreSQL backend does not run
// because what it makes or changes belongs to the whole server, not to a
// run's databases: a role (CREATE/ALTER/DROP ROLE, USER or GROUP, a role's
// membership), a database, a tablespace, an extension, a subscription, the
// server's configuration (ALTER SYSTEM), a replication slot or origin,
// privileges on a database, a tablespace or a parameter, a comment or a
// security label on a database, a role or a tablespace, and REASSIGN or
// DROP OWNED. Dropping the run's databases would not take it away: it
// would outlive the run and meet the next one (the second CREATE ROLE
// fails), or another run in parallel. The harness reports it as bad input.
type Refused struct {
	// Statement is the statement refused, as written.
	Statement string
	// Object names what it makes or changes ("role app_reader").
	Object string
	// Advice says what to do instead.
	Advice string
	// extension is the extension of a CREATE EXTENSION IF NOT EXISTS,
	// which is let through when the run's database has it already.
	extension string
}

func (r *Refused) Error() string {
	return fmt.Sprintf("postgres: refused %q: %s belongs to the whole server, not to the run's databases, so it would outlive the run and meet other runs; %s",
		sqlscan.Short(r.Statement, 100), r.Object, r.Advice)
}

const (
	adviceServer    = "make it outside the harness, once, before the tests run, and leave it out of the schema and the handler"
	adviceExtension = "install it in template1 (every run's databases are made from it): then CREATE EXTENSION IF NOT EXISTS passes"
)

// refusal returns why stmt is refused, or nil. It reads the statement's
// words outside comments and string literals, and also inside
// dollar-quoted bodies (a DO block or a function creating a role) and
// the string literals in them (EXECUTE 'CREATE ROLE ...'); the string
// literals of a DO block or of a function whose body is quoted the old
// way are read too. A name built at run time ('CREATE ' || 'ROLE')
// escapes it.
func refusal(stmt string) *Refused {
	words := sqlscan.Significant(stmt)
	code := len(words) > 0 && (words[0].Is("do") || definesCode(words))
	if r := scanRefusal(words, code, 0); r != nil {
		r.Statement = stmt
		return r
	}
	return nil
}

// definesCode reports whether words are CREATE [OR REPLACE] FUNCTION or
// PROCEDURE.
func definesCode(words []sqlscan.Token) bool {
	i := 1
	if len(words) > 3 && words[1].Is("or") && words[2].Is("replace") {
		i = 3
	}
	return words[0].Is("create") && i < len(words) && (words[i].Is("function") || words[i].Is("procedure"))
}

func scanRefusal(words []sqlscan.Token, strs bool, depth int) *Refused {
	if depth > 4 {
		return nil
	}
	at := func(i int, w ...string) bool {
		for k, x := range w {
			if i+k >= len(words) || !words[i+k].Is(x) {
				return false
			}
		}
		return true
	}
	for i, t := range words {
		switch t.Kind {
		case sqlscan.Dollar:
			body := sqlscan.Significant(t.Value())
			if r := scanRefusal(body, true, depth+1); r != nil {
				return r
			}
			continue
		case sqlscan.String:
			if strs {
				if r := scanRefusal(sqlscan.Significant(t.Value()), true, depth+1); r != nil {
					return r
				}
			}
			continue
		case sqlscan.Word:
		default:
			continue
		}
		if i+1 < len(words) && words[i+1].Kind == sqlscan.LParen {
			if r := serverFunction(t.Text); r != nil {
				return r
			}
		}
		if !startsCommand(words, i) {
			continue
		}
		switch {
		case at(i, "create"), at(i, "alter"), at(i, "drop"):
			if r := serverObject(words, i+1, at(i, "create")); r != nil {
				return r
			}
			if at(i, "alter", "system") {
				return &Refused{Object: "the server's configuration (ALTER SYSTEM)", Advice: adviceServer}
			}
			if at(i, "drop", "owned") {
				return &Refused{Object: "every object and privilege of " + nameAt(words, i+3), Advice: adviceServer}
			}
		case at(i, "reassign", "owned"):
			return &Refused{Object: "the ownership of every object of " + nameAt(words, i+3), Advice: adviceServer}
		case at(i, "grant"), at(i, "revoke"):
			if r := privilege(words, i); r != nil {
				return r
			}
		case at(i, "comment", "on"):
			if r := sharedTarget(words, i+2, "a comment on "); r != nil {
				return r
			}
		case at(i, "security", "label"):
			j := i + 2
			if at(j, "for") {
				j += 2
			}
			if at(j, "on") {
				if r := sharedTarget(words, j+1, "a security label on "); r != nil {
					return r
				}
			}
		}
	}
	return nil
}

// startsCommand reports whether words[i] begins a command: the first
// word, or the first after a semicolon or a PL/pgSQL keyword that a
// statement follows (BEGIN, THEN, ELSE, LOOP), or a rule's DO ALSO or DO
// INSTEAD. A word further into a command is a name (ALTER TABLE t DROP
// role drops the column "role").
func startsCommand(words []sqlscan.Token, i int) bool {
	if i == 0 {
		return true
	}
	p := words[i-1]
	if p.Kind == sqlscan.Semicolon || p.Kind == sqlscan.LParen && i >= 2 && (words[i-2].Is("also") || words[i-2].Is("instead")) {
		return true
	}
	for _, w := range []string{"begin", "then", "else", "loop", "also", "instead"} {
		if p.Is(w) {
			return true
		}
	}
	return false
}

// serverFunction returns the refusal of a call of one of the server's
// functions that make something of the server's, or nil.
func serverFunction(name string) *Refused {
	switch strings.ToLower(name) {
	case "pg_create_logical_replication_slot", "pg_create_physical_replication_slot",
		"pg_copy_logical_replication_slot", "pg_copy_physical_replication_slot":
		return &Refused{Object: "a replication slot (" + name + ")", Advice: adviceServer}
	case "pg_replication_origin_create":
		return &Refused{Object: "a replication origin (" + name + ")", Advice: adviceServer}
	}
	return nil
}

// serverObject reads the kind of object after CREATE, ALTER or DROP at
// words[i]: a refusal for one of the server's.
func serverObject(words []sqlscan.Token, i int, create bool) *Refused {
	if i >= len(words) {
		return nil
	}
	kind := strings.ToLower(words[i].Text)
	if words[i].Kind != sqlscan.Word {
		return nil
	}
	switch kind {
	case "user":
		if i+1 < len(words) && words[i+1].Is("mapping") {
			return nil // a user mapping is the database's
		}
		fallthrough
	case "role", "group":
		return &Refused{Object: "role " + nameAt(words, i+1), Advice: adviceServer}
	case "database", "tablespace", "subscription":
		return &Refused{Object: kind + " " + nameAt(words, i+1), Advice: adviceServer}
	case "extension":
		r := &Refused{Object: "extension " + nameAt(words, i+1), Advice: adviceExtension}
		if create && i+3 < len(words) && words[i+1].Is("if") && words[i+2].Is("not") && words[i+3].Is("exists") {
			r.extension = nameAt(words, i+1)
		}
		return r
	}
	return nil
}

// nameAt is the name at words[i], after IF [NOT] EXISTS.
func nameAt(words []sqlscan.Token, i int) string {
	for i < len(words) && (words[i].Is("if") || words[i].Is("not") || words[i].Is("exists")) {
		i++
	}
	if i >= len(words) {
		return "?"
	}
	if n := words[i].Ident(); n != "" {
		return n
	}
	return words[i].Text
}

// privilege reads the GRANT or REVOKE at words[i]: a role's membership
// (no ON before TO or FROM) or privileges on a database, a tablespace or
// a parameter are refused.
func privilege(words []sqlscan.Token, i int) *Refused {
	depth := 0
	for j := i + 1; j < len(words); j++ {
		t := words[j]
		switch {
		case t.Kind == sqlscan.LParen:
			depth++
		case t.Kind == sqlscan.RParen:
			depth--
		case t.Kind == sqlscan.Semicolon:
			return nil
		case depth > 0:
		case t.Is("on"):
			return sharedTarget(words, j+1, "privileges on ")
		case t.Is("to") || t.Is("from"):
			return &Refused{Object: "the membership of role " + nameAt(words, j+1), Advice: adviceServer}
		}
	}
	return nil
}

// sharedTarget reads the object after ON (a comment's, a label's, a
// privilege's): a refusal when it is a database, a role, a tablespace or
// a parameter.
func sharedTarget(words []sqlscan.Token, i int, what string) *Refused {
	if i >= len(words) {
		return nil
	}
	switch kind := strings.ToLower(words[i].Text); {
	case words[i].Kind != sqlscan.Word:
	case kind == "database" || kind == "role" || kind == "tablespace" || kind == "parameter":
		return &Refused{Object: what + kind + " " + nameAt(words, i+1), Advice: adviceServer}
	}
	return nil
}

// onEventTrigger reports whether stmt is CREATE, ALTER or DROP EVENT
// TRIGGER.
func onEventTrigger(stmt string) bool {
	words := sqlscan.Significant(stmt)
	return len(words) > 2 && (words[0].Is("create") || words[0].Is("alter") || words[0].Is("drop")) &&
		words[1].Is("event") && words[2].Is("trigger")
}

// setsSearchPath reports whether stmt sets a search_path (SET [SESSION |
// LOCAL] search_path, a function's SET search_path, set_config) that does
// not name the harness's schema, also in a DO block or a function body.
func setsSearchPath(stmt string) bool {
	if !strings.Contains(strings.ToLower(stmt), "search_path") {
		return false
	}
	return setsPath(sqlscan.Significant(stmt), 0)
}

func setsPath(words []sqlscan.Token, depth int) bool {
	if depth > 4 {
		return false
	}
	for i, t := range words {
		switch {
		case t.Kind == sqlscan.Dollar:
			if setsPath(sqlscan.Significant(t.Value()), depth+1) {
				return true
			}
		case t.Is("search_path") && i > 0 && (words[i-1].Is("set") || words[i-1].Is("session") || words[i-1].Is("local")),
			t.Kind == sqlscan.String && strings.EqualFold(t.Value(), "search_path") && i > 1 && words[i-2].Is("set_config"):
			// The value runs to the end of the command.
			for j := i + 1; j < len(words) && words[j].Kind != sqlscan.Semicolon && !words[j].Is("as"); j++ {
				if strings.Contains(strings.ToLower(words[j].Text), harnessSchema) {
					return false
				}
			}
			return true
		}
	}
	return false
}
