package backend

import (
	"testing"

	"github.com/jackc/pgx/v5/pgproto3"
)

// TestFrontendUnit: the splice runs again only one round trip of one
// statement whose every message it can send twice.
func TestFrontendUnit(t *testing.T) {
	enc := func(msgs ...pgproto3.FrontendMessage) []byte {
		var b []byte
		for _, m := range msgs {
			var err error
			if b, err = m.Encode(b); err != nil {
				t.Fatal(err)
			}
		}
		return b
	}
	exec := []pgproto3.FrontendMessage{&pgproto3.Bind{PreparedStatement: "stmtcache_1"}, &pgproto3.Describe{ObjectType: 'P'}, &pgproto3.Execute{}}
	for _, tc := range []struct {
		name string
		b    []byte
		want bool
	}{
		{"a simple query", enc(&pgproto3.Query{String: "UPDATE t SET n = n + 1"}), true},
		{"an extended query", enc(append(exec, &pgproto3.Sync{})...), true},
		{"an unnamed statement parsed and run", enc(&pgproto3.Parse{Query: "SELECT 1"}, &pgproto3.Bind{}, &pgproto3.Execute{}, &pgproto3.Sync{}), true},
		{"a batch, one sync", enc(append(append(exec, exec...), &pgproto3.Sync{})...), true},
		{"a prepare: no execute", enc(&pgproto3.Parse{Name: "stmtcache_1", Query: "SELECT 1"}, &pgproto3.Describe{ObjectType: 'S', Name: "stmtcache_1"}, &pgproto3.Sync{}), false},
		{"a named statement parsed with its run", enc(&pgproto3.Parse{Name: "s", Query: "SELECT 1"}, &pgproto3.Bind{PreparedStatement: "s"}, &pgproto3.Execute{}, &pgproto3.Sync{}), false},
		{"two round trips", enc(append(append(exec, &pgproto3.Sync{}), append(exec, &pgproto3.Sync{})...)...), false},
		{"two queries", enc(&pgproto3.Query{String: "SELECT 1"}, &pgproto3.Query{String: "SELECT 2"}), false},
		{"no sync yet", enc(exec...), false},
		{"copy data", enc(&pgproto3.CopyData{Data: []byte("1\n")}, &pgproto3.CopyDone{}), false},
		{"a flush", enc(append(exec, &pgproto3.Flush{})...), false},
		{"a message cut short", enc(&pgproto3.Query{String: "SELECT 1"})[:7], false},
	} {
		if got := frontendUnit(tc.b); got != tc.want {
			t.Errorf("%s: frontendUnit = %v, want %v", tc.name, got, tc.want)
		}
	}
}
