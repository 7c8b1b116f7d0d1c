package sqlitestore_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/impl/adapter/sqlitestore"
	"github.com/idemcheck/idemcheck/impl/adapter/sqlstore/sqlstoretest"
	"github.com/idemcheck/idemcheck/impl/contract/clock"
	"github.com/idemcheck/idemcheck/impl/contract/store"
	"github.com/idemcheck/idemcheck/impl/contract/store/storetest"
)

// open opens a store for t and closes it when t ends.
func open(t *testing.T, opts sqlitestore.Options) *sqlitestore.Store {
	t.Helper()
	s, err := sqlitestore.Open(t.Context(), opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

// TestConformanceFile runs the contract's suite on a database file.
func TestConformanceFile(t *testing.T) {
	storetest.Run(t, func(t *testing.T, c clock.Source) store.Store {
		return open(t, sqlitestore.Options{Path: filepath.Join(t.TempDir(), "store.db"), Clock: c})
	})
}

// TestConformanceMemory runs the contract's suite on an in-memory database.
func TestConformanceMemory(t *testing.T) {
	storetest.Run(t, func(t *testing.T, c clock.Source) store.Store {
		return open(t, sqlitestore.Options{Clock: c})
	})
}

// TestReopenFile: a file store keeps its records, ledger and token sequence
// across Close and Open, so tokens keep increasing across restarts.
func TestReopenFile(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "store.db")
	clk := clock.NewVirtual(1_000)
	k := store.Key{Tenant: "t", Consumer: "ledger", ID: "e1"}
	s, err := sqlitestore.Open(ctx, sqlitestore.Options{Path: path, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	first, err := s.Claim(ctx, k, 10)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	clk.Advance(10)
	s = open(t, sqlitestore.Options{Path: path, Clock: clk})
	c, err := s.Claim(ctx, k, 10)
	if err != nil {
		t.Fatal(err)
	}
	if c.Outcome != store.Acquired || !c.Takeover || c.Attempt != 2 || c.Token <= first.Token {
		t.Errorf("claim after reopening = %+v, want a takeover at attempt 2 with a token above %d", c, first.Token)
	}
}

// TestMemoryNames: stores opened with one memory name share a database,
// with different names they do not.
func TestMemoryNames(t *testing.T) {
	ctx := context.Background()
	clk := clock.NewVirtual(1_000)
	a := open(t, sqlitestore.Options{MemoryName: t.Name() + "-shared", Clock: clk})
	b := open(t, sqlitestore.Options{MemoryName: t.Name() + "-shared", Clock: clk})
	other := open(t, sqlitestore.Options{Clock: clk})
	k := store.Key{Consumer: "ledger", ID: "e1"}
	if _, err := a.Claim(ctx, k, 10); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := b.Get(ctx, k); err != nil || !ok {
		t.Errorf("store on the same memory name: Get = %v, %v; want the record", ok, err)
	}
	if _, ok, err := other.Get(ctx, k); err != nil || ok {
		t.Errorf("store on another memory name: Get = %v, %v; want no record", ok, err)
	}
	if _, err := sqlitestore.Open(ctx, sqlitestore.Options{MemoryName: "no/slash"}); err == nil {
		t.Errorf("Open accepted a memory name with a slash")
	}
}

// TestCrash: a unit of work crashed before or inside its commit lands
// nothing and leaves no lock behind, on file and in memory.
func TestCrash(t *testing.T) {
	for _, inFile := range []bool{true, false} {
		name := map[bool]string{true: "file", false: "memory"}[inFile]
		t.Run(name, func(t *testing.T) {
			sqlstoretest.RunCrash(t, func(t *testing.T, c clock.Source) store.Store {
				// A short busy timeout: a lock the crashed connection kept
				// fails the test in seconds.
				opts := sqlitestore.Options{Clock: c, BusyTimeout: 2 * time.Second}
				if inFile {
					opts.Path = filepath.Join(t.TempDir(), "store.db")
				}
				return open(t, opts)
			})
		})
	}
}

// TestDatabaseClock: without a Clock, SQLite's clock is the store's time.
func TestDatabaseClock(t *testing.T) {
	sqlstoretest.RunDatabaseClock(t, func(t *testing.T, c clock.Source) store.Store {
		return open(t, sqlitestore.Options{Clock: c})
	})
}
