package consumersnode_test

import (
	"context"
	"strconv"
	"testing"
)

// BenchmarkInsertFirst: one delivery of insert-first.js (begin, two
// inserts, commit, done: five round trips to the process) on a plain
// SQLite database, against the same statements run directly from Go.
func BenchmarkInsertFirst(b *testing.B) {
	ctx := context.Background()
	b.Run("node", func(b *testing.B) {
		db := openBenchDB(b)
		f, c, err := worker(b, "insert-first.js")("w1")
		if err != nil {
			b.Fatal(err)
		}
		defer c.Close()
		b.ResetTimer()
		for i := range b.N {
			if err := f(ctx, db, message("e"+strconv.Itoa(i), 500)); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("direct", func(b *testing.B) {
		db := openBenchDB(b)
		b.ResetTimer()
		for i := range b.N {
			id := "e" + strconv.Itoa(i)
			tx, err := db.BeginTx(ctx, nil)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := tx.ExecContext(ctx, `INSERT INTO processed_events (consumer_group, event_id) VALUES (?, ?)`, "ledger", id); err != nil {
				b.Fatal(err)
			}
			if _, err := tx.ExecContext(ctx, `INSERT INTO ledger (event_id, user_id, amount_cents) VALUES (?, ?, ?)`, id, "u1", 500); err != nil {
				b.Fatal(err)
			}
			if err := tx.Commit(); err != nil {
				b.Fatal(err)
			}
		}
	})
}
