package idemkeys_test

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	_ "modernc.org/sqlite"

	"github.com/idemcheck/idemcheck/examples/libraries/idemkeys"
)

// TestClaimAndSweep: a key is claimed once; the clean-up deletes it once
// its TTL is over, at its next tick, and Close stops it.
func TestClaimAndSweep(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		db, err := sql.Open("sqlite", "file:"+t.Name()+"?mode=memory&cache=shared")
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		db.SetMaxOpenConns(1)
		ctx := context.Background()
		for _, stmt := range strings.Split(idemkeys.Schema, ";") {
			if strings.TrimSpace(stmt) != "" {
				if _, err := db.ExecContext(ctx, stmt); err != nil {
					t.Fatal(err)
				}
			}
		}
		keys := idemkeys.New(db, idemkeys.Options{TTL: time.Hour, SweepEvery: time.Minute})
		claim := func() bool {
			tx, err := db.BeginTx(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback()
			ok, err := keys.Claim(ctx, tx, "k1")
			if err != nil {
				t.Fatal(err)
			}
			if err := tx.Commit(); err != nil {
				t.Fatal(err)
			}
			return ok
		}
		if !claim() || claim() {
			t.Fatal("k1 must be claimed once")
		}
		count := func() (n int) {
			if err := db.QueryRow(`SELECT count(*) FROM idempotency_keys`).Scan(&n); err != nil {
				t.Fatal(err)
			}
			return n
		}
		time.Sleep(59 * time.Minute)
		synctest.Wait()
		if count() != 1 {
			t.Fatal("the key was swept before its TTL ran out")
		}
		time.Sleep(2 * time.Minute)
		synctest.Wait()
		if count() != 0 {
			t.Fatal("the key outlived its TTL by a tick")
		}
		if err := keys.Close(); err != nil {
			t.Fatal(err)
		}
		if err := keys.Close(); !errors.Is(err, idemkeys.ErrClosed) {
			t.Fatalf("Close twice: %v", err)
		}
		if !claim() {
			t.Fatal("k1 must be claimable once swept")
		}
	})
}
