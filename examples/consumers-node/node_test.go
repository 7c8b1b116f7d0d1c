package consumersnode_test

import (
	"context"
	"database/sql"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	_ "modernc.org/sqlite"

	"github.com/idemcheck/idemcheck/impl/adapter/consumerproc"
	"github.com/idemcheck/idemcheck/impl/contract/event"
	"github.com/idemcheck/idemcheck/impl/contract/handler"
)

// Each consumer declares its schema and effects query in its hello
// (serve's second argument); the tests read them with Declare.

// node returns the path of node, or skips (fails under NODE_REQUIRED=1).
func node(t testing.TB) string {
	t.Helper()
	path, err := exec.LookPath("node")
	if err != nil {
		if os.Getenv("NODE_REQUIRED") != "" {
			t.Fatalf("node is not installed, and NODE_REQUIRED is set: %v", err)
		}
		t.Skip("node is not installed: skipping the Node.js consumers (set NODE_REQUIRED=1 to make this a failure)")
	}
	return path
}

// pools keep each consumer's processes for the whole test binary:
// processes that declare reset are reused by every test that runs the
// consumer (TestMain closes them).
var (
	poolMu sync.Mutex
	pools  = map[string]*consumerproc.Pool{}
)

func TestMain(m *testing.M) {
	code := m.Run()
	for _, pl := range pools {
		pl.Close()
	}
	os.Exit(code)
}

// worker runs the Node.js consumer in file as a handler.Worker.
func worker(t testing.TB, file string) handler.Worker {
	argv := []string{node(t), file}
	poolMu.Lock()
	defer poolMu.Unlock()
	pl, ok := pools[file]
	if !ok {
		pl = consumerproc.NewPool(argv, consumerproc.Options{})
		pools[file] = pl
	}
	return pl.Worker
}

// declarations caches what each consumer declares: a process start saved
// per test.
var (
	declMu       sync.Mutex
	declarations = map[string]consumerproc.Declaration{}
)

// declared is what the consumer in file declares in its hello.
func declared(t testing.TB, file string) consumerproc.Declaration {
	t.Helper()
	declMu.Lock()
	defer declMu.Unlock()
	if d, ok := declarations[file]; ok {
		return d
	}
	d, err := consumerproc.Declare([]string{node(t), file}, consumerproc.Options{})
	if err != nil {
		t.Fatal(err)
	}
	declarations[file] = d
	if d.Schema == "" || d.Effects == "" {
		t.Fatalf("%s declares schema %q and effects %q; want both", file, d.Schema, d.Effects)
	}
	return d
}

// openBenchDB opens a fresh database with the insert-first schema.
// It lives in memory, on one connection: what is measured is the
// protocol, not the disk.
func openBenchDB(b *testing.B) *sql.DB {
	b.Helper()
	db, err := sql.Open("sqlite", ":memory:")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	db.SetMaxOpenConns(1)
	if _, err := db.Exec(declared(b, "insert-first.js").Schema); err != nil {
		b.Fatal(err)
	}
	return db
}

func openDB(t *testing.T, schema string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", filepath.Join(t.TempDir(), "db.sqlite"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if _, err := db.Exec(schema); err != nil {
		t.Fatal(err)
	}
	return db
}

func start(t *testing.T, w handler.Worker, id string) (handler.Func, func()) {
	t.Helper()
	f, c, err := w(id, nil)
	if err != nil {
		t.Fatalf("start %s: %v", id, err)
	}
	t.Cleanup(func() { c.Close() })
	return f, func() { c.Close() }
}

func message(id string, amount int64) handler.Message {
	return handler.Message{
		EventID: id, Event: event.OrderPaid{EventID: id, UserID: "u1", OrderID: "o-" + id, AmountCents: amount, Tenant: "t"},
		Topic: "orders", Group: "ledger", Tenant: "t", IdempotencyKey: id, Attempts: 1,
	}
}

func credits(t *testing.T, db *sql.DB, effects string) string {
	t.Helper()
	rows, err := db.Query(effects + ` ORDER BY rowid`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var id string
		var amount int64
		if err := rows.Scan(&id, &amount); err != nil {
			t.Fatal(err)
		}
		out = append(out, id+"="+strconv.FormatInt(amount, 10))
	}
	return strings.Join(out, " ")
}

// TestSequentialDeliveries: delivered one after another to one worker, and
// again to a restarted one, every consumer handles duplicates — except the
// LRU, whose memory dies with its process. The races and crashes that
// break the others are the harness's job (the verdict tests).
func TestSequentialDeliveries(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		file, want string
	}{
		{"insert-first.js", "e1=500 e2=700"},
		{"effect-then-mark.js", "e1=500 e2=700"},
		{"check-then-act.js", "e1=500 e2=700"},
		{"lru.js", "e1=500 e2=700 e1=500"},
	} {
		t.Run(c.file, func(t *testing.T) {
			d := declared(t, c.file)
			db := openDB(t, d.Schema)
			w := worker(t, c.file)
			f, crash := start(t, w, "w1")
			for _, m := range []handler.Message{message("e1", 500), message("e2", 700), message("e1", 500)} {
				if err := f(ctx, db, m); err != nil {
					t.Fatalf("deliver %s: %v", m.EventID, err)
				}
			}
			crash()
			f, _ = start(t, w, "w1")
			if err := f(ctx, db, message("e1", 500)); err != nil {
				t.Fatalf("redeliver after a restart: %v", err)
			}
			if got := credits(t, db, d.Effects); got != c.want {
				t.Errorf("ledger %q, want %q", got, c.want)
			}
		})
	}
}

// TestNodeErrorsBecomeOutcomes: a statement the database refuses comes back
// to the handler as an exception; one it does not catch nacks the delivery
// with its text.
func TestNodeErrorsBecomeOutcomes(t *testing.T) {
	db := openDB(t, `CREATE TABLE ledger (event_id TEXT)`) // no processed_events
	f, _ := start(t, worker(t, "insert-first.js"), "w1")
	err := f(context.Background(), db, message("e1", 500))
	if err == nil || handler.IsPoison(err) || !strings.Contains(err.Error(), "no such table: processed_events") {
		t.Errorf("delivery against a missing table: %v, want a transient error naming it", err)
	}
}
