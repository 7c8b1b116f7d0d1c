package inbox_test

import (
	"context"
	"database/sql"
	"errors"
	"testing"

	_ "modernc.org/sqlite"

	"github.com/idemcheck/idemcheck/examples/libraries/inbox"
)

func open(t *testing.T) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+t.Name()+"?mode=memory&cache=shared")
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	t.Cleanup(func() { db.Close() })
	return db
}

func count(t *testing.T, db *sql.DB, query string) int {
	t.Helper()
	var n int
	if err := db.QueryRow(query).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestProcessRunsOncePerMessage: the second delivery of a message is
// skipped, a failed one leaves no record, and the tables come on first use.
func TestProcessRunsOncePerMessage(t *testing.T) {
	ctx := context.Background()
	db := open(t)
	in := inbox.New(db)
	if n := count(t, db, `SELECT count(*) FROM sqlite_master WHERE name = 'inbox_messages'`); n != 0 {
		t.Fatalf("New created the table already")
	}
	runs := 0
	work := func(context.Context, *sql.Tx) error { runs++; return nil }
	for i, want := range []bool{true, false} {
		ran, err := in.Process(ctx, "m1", work)
		if err != nil || ran != want {
			t.Fatalf("delivery %d: ran=%v err=%v, want ran=%v", i+1, ran, err, want)
		}
	}
	boom := errors.New("boom")
	if ran, err := in.Process(ctx, "m2", func(context.Context, *sql.Tx) error { return boom }); ran || !errors.Is(err, boom) {
		t.Fatalf("a failing message: ran=%v err=%v", ran, err)
	}
	if ran, err := in.Process(ctx, "m2", work); !ran || err != nil {
		t.Fatalf("m2 after its failure: ran=%v err=%v", ran, err)
	}
	if runs != 2 || count(t, db, `SELECT count(*) FROM inbox_messages`) != 2 {
		t.Fatalf("%d runs, %d records; want 2 and 2", runs, count(t, db, `SELECT count(*) FROM inbox_messages`))
	}
	// A second inbox over the same database finds the tables and records.
	again, err := inbox.Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	if ran, err := again.Process(ctx, "m1", work); ran || err != nil {
		t.Fatalf("m1 through a second inbox: ran=%v err=%v", ran, err)
	}
}
