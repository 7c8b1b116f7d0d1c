package consumerproc_test

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	_ "modernc.org/sqlite"

	"github.com/idemcheck/idemcheck/impl/adapter/consumerproc"
	"github.com/idemcheck/idemcheck/impl/contract/event"
	"github.com/idemcheck/idemcheck/impl/contract/handler"
)

func TestMain(m *testing.M) {
	if mode := os.Getenv(fakeEnv); mode != "" {
		os.Exit(fake(mode))
	}
	os.Exit(m.Run())
}

// timeout keeps the hang tests fast; a real consumer gets the default.
const timeout = 500 * time.Millisecond

const schema = `
CREATE TABLE processed_events (consumer_group TEXT NOT NULL, event_id TEXT NOT NULL, PRIMARY KEY (consumer_group, event_id));
CREATE TABLE ledger (event_id TEXT NOT NULL, user_id TEXT NOT NULL, amount_cents INTEGER NOT NULL);`

// openDB opens a fresh SQLite database with the schema.
func openDB(t *testing.T) *sql.DB {
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

// startTimeout bounds the start of a fake that is not meant to hang at
// its start: a loaded machine may take more than the timeout to start it.
const startTimeout = 30 * time.Second

func fakeWorker(mode string) handler.Worker {
	return fakeWorkerStarting(mode, startTimeout)
}

// fakeWorkerStarting is fakeWorker with the given start timeout.
func fakeWorkerStarting(mode string, start time.Duration) handler.Worker {
	// A race-instrumented binary sleeps a second at exit unless told not
	// to, which would read as a hang.
	env := []string{fakeEnv + "=" + mode, "GORACE=atexit_sleep_ms=0"}
	return consumerproc.Worker([]string{os.Args[0]}, consumerproc.Options{Env: env, Timeout: timeout, StartTimeout: start})
}

// start runs the Worker for worker w1 and registers its Closer.
func start(t *testing.T, w handler.Worker) handler.Func {
	t.Helper()
	f, c, err := w("w1", nil)
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return f
}

func msg(id, user string, amount int64) handler.Message {
	return handler.Message{
		EventID: id, Event: event.OrderPaid{EventID: id, UserID: user, OrderID: "o-" + id, AmountCents: amount, Tenant: "t"},
		Topic: "orders", Group: "ledger", Tenant: "t", IdempotencyKey: id, Attempts: 1,
	}
}

func ledger(t *testing.T, db *sql.DB) string {
	t.Helper()
	rows, err := db.Query(`SELECT event_id, amount_cents FROM ledger ORDER BY event_id`)
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

// TestDeliveries: the process's statements run on the given database,
// transactions included; a unique violation reaches it as such; its
// outcomes become ack, a transient error and a poison error.
func TestDeliveries(t *testing.T) {
	ctx := context.Background()
	db := openDB(t)
	f := start(t, fakeWorker("ok"))
	if err := f(ctx, db, msg("e1", "u1", 5)); err != nil {
		t.Fatalf("first delivery: %v", err)
	}
	if err := f(ctx, db, msg("e1", "u1", 5)); err != nil {
		t.Fatalf("duplicate delivery: %v, want an ack (the unique violation is a duplicate)", err)
	}
	if got := ledger(t, db); got != "e1=5" {
		t.Errorf("ledger %q, want one credit", got)
	}
	err := f(ctx, db, msg("e2", "nack", 1))
	if err == nil || handler.IsPoison(err) || err.Error() != "lock timeout" {
		t.Errorf("nack: %v, want the transient error \"lock timeout\"", err)
	}
	err = f(ctx, db, msg("e3", "poison", 1))
	if !handler.IsPoison(err) || !strings.Contains(err.Error(), "amount is negative") {
		t.Errorf("poison: %v", err)
	}
	err = f(ctx, db, msg("e4", "bad-sql", 1))
	if err == nil || !strings.Contains(err.Error(), "error: ") || !strings.Contains(err.Error(), "nowhere") {
		t.Errorf("a failing statement: %v, want its error with code \"error\"", err)
	}
	err = f(ctx, db, msg("e5", "commit-outside", 1))
	if err == nil || !strings.HasPrefix(err.Error(), "bad_request: commit outside a transaction") {
		t.Errorf("commit outside a transaction: %v", err)
	}
	if got := ledger(t, db); got != "e1=5" {
		t.Errorf("ledger %q after the failures, want it unchanged", got)
	}
}

// TestPointCallsTheHarness: a point request goes to handler.Point.
func TestPointCallsTheHarness(t *testing.T) {
	db := openDB(t)
	f := start(t, fakeWorker("ok"))
	var points []string
	ctx := handler.WithPoint(context.Background(), func(what string) { points = append(points, what) })
	if err := f(ctx, db, msg("e1", "point", 5)); err != nil {
		t.Fatal(err)
	}
	if len(points) != 1 || points[0] != "redis SET e1 NX" {
		t.Errorf("points %q", points)
	}
}

// TestOpenTransactionRollsBack: a process that acks with its transaction
// still open has committed nothing.
func TestOpenTransactionRollsBack(t *testing.T) {
	db := openDB(t)
	f := start(t, fakeWorker("open-tx"))
	if err := f(context.Background(), db, msg("e1", "u1", 5)); err != nil {
		t.Fatal(err)
	}
	if got := ledger(t, db); got != "" {
		t.Errorf("ledger %q, want nothing: the transaction was never committed", got)
	}
}

// TestCloseKillsAndRestartStartsFresh: Close kills the process (a crash);
// the worker refuses further deliveries; calling the Worker again starts a
// new process that works.
func TestCloseKillsAndRestartStartsFresh(t *testing.T) {
	ctx := context.Background()
	db := openDB(t)
	w := fakeWorker("ok")
	f, c, err := w("w1", nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f(ctx, db, msg("e1", "u1", 5)); err == nil || !strings.Contains(err.Error(), "closed") {
		t.Errorf("delivery after Close: %v", err)
	}
	f2 := start(t, w)
	if err := f2(ctx, db, msg("e1", "u1", 5)); err != nil {
		t.Errorf("delivery to the restarted worker: %v", err)
	}
}

// mustPanic delivers m and returns the *Error the Func panicked with.
func mustPanic(t *testing.T, f handler.Func, db *sql.DB, m handler.Message) (err error) {
	t.Helper()
	defer func() {
		p := recover()
		pe, ok := p.(*consumerproc.Error)
		if !ok {
			t.Fatalf("the delivery answered %v and panicked with %v (%T), want a panic with a *consumerproc.Error", err, p, p)
		}
		err = pe
	}()
	return f(context.Background(), db, m)
}

// wantError checks that err is an *Error whose message names the command,
// the request and what happened, and that it came within the timeout.
func wantError(t *testing.T, err error, elapsed time.Duration, says ...string) {
	t.Helper()
	var pe *consumerproc.Error
	if !errors.As(err, &pe) {
		t.Fatalf("error %v (%T), want a *consumerproc.Error", err, err)
	}
	t.Logf("reported: %v", err)
	for _, s := range append(says, pe.Command, "worker w1") {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error %q does not say %q", err, s)
		}
	}
	if elapsed > timeout+3*time.Second {
		t.Errorf("took %v to report, want about the timeout %v", elapsed, timeout)
	}
}

// TestFailingAtStart: a process that cannot start, hangs, dies or speaks
// another protocol version fails the Worker call with a clear error.
func TestFailingAtStart(t *testing.T) {
	for _, c := range []struct {
		name string
		w    handler.Worker
		says []string
	}{
		{"hang", fakeWorkerStarting("hang-hello", timeout), []string{"hello", "no answer within 500ms"}},
		{"exit", fakeWorker("exit3"), []string{"hello", "died", "exited with status 3", "cannot connect: boom"}},
		{"version", fakeWorker("version3"), []string{"hello", "speaks protocol version 3; this harness speaks versions 1 to 2"}},
		{"no-version", fakeWorker("no-version"), []string{"without a protocol version"}},
		{"no-such-command", consumerproc.Worker([]string{"/nonexistent/consumer"}, consumerproc.Options{Timeout: timeout, StartTimeout: timeout}), []string{"could not start"}},
		{"shell-garbage", consumerproc.Worker([]string{"sh", "-c", "echo garbage; sleep 100"}, consumerproc.Options{Timeout: timeout, StartTimeout: startTimeout}), []string{"garbage"}},
		{"shell-sleep", consumerproc.Worker([]string{"sh", "-c", "sleep 100"}, consumerproc.Options{Timeout: timeout, StartTimeout: timeout}), []string{"hung"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			begin := time.Now()
			_, closer, err := c.w("w1", nil)
			if err == nil {
				closer.Close()
				t.Fatal("the Worker started")
			}
			wantError(t, err, time.Since(begin), c.says...)
		})
	}
}

// TestFailingMidDelivery: a process that hangs, dies or sends garbage
// during a delivery is killed and reported naming the request; every later
// delivery of its worker fails at once with the same error. A death or
// garbage fails the command for good; a hang is the handler's (its
// HandlerHung says so), and a later worker gets a process of its own.
func TestFailingMidDelivery(t *testing.T) {
	for _, c := range []struct {
		mode   string
		says   []string
		ledger string // what the process committed before failing
	}{
		{"hang-deliver", []string{"delivery 1 (event e1, attempt 1)", "no answer within 500ms"}, ""},
		{"die-deliver", []string{"delivery 1 (event e1, attempt 1)", "died", "status 1", "TypeError"}, ""},
		{"garbage", []string{"delivery 1", "garbage", "this is not json"}, ""},
		{"wrong-delivery", []string{"a request for delivery 2 during delivery 1"}, ""},
		{"unknown-type", []string{`unknown type "fetch"`}, ""},
		{"bad-outcome", []string{`outcome "maybe"`}, ""},
		{"hang-after-exec", []string{`request 1 of delivery 1 (event e1): exec "INSERT INTO ledger`, "no answer within"}, "e1=5"},
		{"die-after-query", []string{`request 1 of delivery 1 (event e1): query "SELECT COUNT(*) FROM ledger"`, "status 7", "out of memory"}, ""},
	} {
		t.Run(c.mode, func(t *testing.T) {
			db := openDB(t)
			w := fakeWorker(c.mode)
			f := start(t, w)
			begin := time.Now()
			err := mustPanic(t, f, db, msg("e1", "u1", 5))
			wantError(t, err, time.Since(begin), c.says...)
			begin = time.Now()
			again := mustPanic(t, f, db, msg("e2", "u1", 5))
			if again.Error() != err.Error() || time.Since(begin) > 100*time.Millisecond {
				t.Errorf("delivery after the failure: %v after %v, want the same error at once", again, time.Since(begin))
			}
			hung := strings.HasPrefix(c.mode, "hang")
			var pe *consumerproc.Error
			if !errors.As(err, &pe) || pe.HandlerHung() != hung {
				t.Errorf("HandlerHung() of %v: want %t", err, hung)
			}
			_, c2, again := w("w2", nil)
			switch {
			case hung && again != nil:
				t.Errorf("the Worker after a hang: %v, want a process of its own", again)
			case hung:
				c2.Close()
			case !errors.Is(again, err) || !strings.Contains(again.Error(), "not starting"):
				t.Errorf("the Worker after the failure: %v, want an error wrapping the failure", again)
			}
			if got := ledger(t, db); got != c.ledger {
				t.Errorf("ledger %q, want %q", got, c.ledger)
			}
		})
	}
}

func TestParseCommand(t *testing.T) {
	argv, err := consumerproc.ParseCommand("  node  consumer.js --x ")
	if err != nil || strings.Join(argv, "|") != "node|consumer.js|--x" {
		t.Errorf("ParseCommand = %q, %v", argv, err)
	}
	if _, err := consumerproc.ParseCommand("  "); err == nil {
		t.Error("an empty command parsed")
	}
}

// TestDeclare: Declare reads what the hello declares and kills the process.
func TestDeclare(t *testing.T) {
	env := []string{fakeEnv + "=aggregate", "GORACE=atexit_sleep_ms=0"}
	d, err := consumerproc.Declare([]string{os.Args[0]}, consumerproc.Options{Env: env, Timeout: timeout})
	want := consumerproc.Declaration{Schema: "CREATE TABLE t (x)", Effects: "SELECT x FROM t", Aggregate: true, Dedupe: "SELECT 1"}
	if err != nil || d != want {
		t.Errorf("Declare = %+v, %v; want %+v", d, err, want)
	}
	env = []string{fakeEnv + "=version3", "GORACE=atexit_sleep_ms=0"}
	if _, err := consumerproc.Declare([]string{os.Args[0]}, consumerproc.Options{Env: env, Timeout: timeout, StartTimeout: timeout}); err == nil ||
		!strings.Contains(err.Error(), "speaks protocol version 3") {
		t.Errorf("Declare of a process of another version: %v", err)
	}
}
