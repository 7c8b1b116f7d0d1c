package postings_test

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	_ "modernc.org/sqlite"

	"github.com/idemcheck/idemcheck/examples/libraries/postings"
)

// TestPostOnceOnASQLiteFile: on a SQLite file, in WAL mode and in
// rollback-journal mode, Post's read on a second connection is let in
// while its transaction holds the write lock (BEGIN IMMEDIATE), and a key
// is posted once.
func TestPostOnceOnASQLiteFile(t *testing.T) {
	for _, journal := range []string{"WAL", "DELETE"} {
		t.Run(journal, func(t *testing.T) {
			ctx := context.Background()
			dsn := "file:" + filepath.Join(t.TempDir(), "ledger.db") +
				"?_pragma=journal_mode(" + journal + ")&_pragma=busy_timeout(100)&_txlock=immediate"
			db, err := sql.Open("sqlite", dsn)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			for _, stmt := range strings.Split(postings.Schema+`;INSERT INTO accounts VALUES ('a1', 'EUR')`, ";") {
				if strings.TrimSpace(stmt) != "" {
					if _, err := db.ExecContext(ctx, stmt); err != nil {
						t.Fatal(err)
					}
				}
			}
			l := postings.New(db)
			p := postings.Posting{Key: "k1", Account: "a1", Cents: 100}
			for i, want := range []bool{true, false} {
				if posted, err := l.Post(ctx, p); err != nil || posted != want {
					t.Fatalf("post %d: posted=%v err=%v, want %v", i+1, posted, err, want)
				}
			}
			if _, err := l.Post(ctx, postings.Posting{Key: "k2", Account: "nobody", Cents: 1}); !errors.Is(err, postings.ErrUnknownAccount) {
				t.Fatalf("an unknown account: %v", err)
			}
		})
	}
}
