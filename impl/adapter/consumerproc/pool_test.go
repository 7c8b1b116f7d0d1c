package consumerproc_test

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/idemcheck/idemcheck/consumertest"
	"github.com/idemcheck/idemcheck/consumertest/scenario"
	"github.com/idemcheck/idemcheck/impl/adapter/consumerproc"
	"github.com/idemcheck/idemcheck/impl/contract/handler"
)

// fakePool is a pool of fake consumers in mode; reset is the fake's
// resetEnv ("" for a version-1 fake).
func fakePool(t *testing.T, mode, reset string, maxIdle int) *consumerproc.Pool {
	t.Helper()
	env := []string{fakeEnv + "=" + mode, resetEnv + "=" + reset, "GORACE=atexit_sleep_ms=0"}
	pl := consumerproc.NewPool([]string{os.Args[0]}, consumerproc.Options{Env: env, Timeout: timeout, StartTimeout: startTimeout, MaxIdle: maxIdle})
	t.Cleanup(func() { pl.Close() })
	return pl
}

// points delivers m to f and returns the points it made.
func points(t *testing.T, f handler.Func, db *sql.DB, m handler.Message) []string {
	t.Helper()
	var got []string
	ctx := handler.WithPoint(context.Background(), func(what string) { got = append(got, what) })
	if err := f(ctx, db, m); err != nil {
		t.Fatalf("deliver %s: %v", m.EventID, err)
	}
	return got
}

// TestResetReusesTheProcess: a process that declares reset serves the
// next worker once its worker stopped (ahead of a spare that never served
// one): a reset names the new worker, whose deliveries count from 1 again; what the process kept
// in memory is gone (the fake credits e1 again, as a fresh one would).
func TestResetReusesTheProcess(t *testing.T) {
	db := openDB(t)
	pl := fakePool(t, "remember", "clear", 0)
	f, c, err := pl.Worker("w1", nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := points(t, f, db, msg("e1", "u1", 5)); strings.Join(got, "|") != "w1 delivery 1 on sqlite" {
		t.Errorf("points %q, want the worker, the delivery and the database", got)
	}
	c.Close()
	f, c, err = pl.Worker("w2#2", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if got := points(t, f, db, msg("e1", "u1", 5)); strings.Join(got, "|") != "w2#2 delivery 1 on sqlite" {
		t.Errorf("points %q after the reset, want the new worker's name and its first delivery", got)
	}
	if got := ledger(t, db); got != "e1=5 e1=5" {
		t.Errorf("ledger %q: the reset process must have forgotten e1 and credited it again", got)
	}
	if st := pl.Stats(); st.Reused != 1 {
		t.Errorf("stats %+v, want the process reused once", st)
	}
}

// TestResetInTheMiddleOfADelivery: a worker that crashed at a scheduling
// point (its goroutine ended there, as the harness ends it) gives back a
// process that waits for a result; the reset stands in for it, the
// process abandons the delivery and serves the next worker.
func TestResetInTheMiddleOfADelivery(t *testing.T) {
	db := openDB(t)
	pl := fakePool(t, "ok", "clear", 0)
	f, c, err := pl.Worker("w1", nil)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		ctx := handler.WithPoint(context.Background(), func(string) { runtime.Goexit() }) // a crash at the point
		f(ctx, db, msg("e1", "point", 5))
	}()
	wg.Wait()
	c.Close()
	f, c, err = pl.Worker("w1#2", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := f(context.Background(), db, msg("e1", "u1", 5)); err != nil {
		t.Fatalf("the delivery after the reset: %v", err)
	}
	if got := ledger(t, db); got != "e1=5" {
		t.Errorf("ledger %q, want e1 credited once, by the second delivery", got)
	}
	if st := pl.Stats(); st.Reused != 1 {
		t.Errorf("stats %+v, want the process reused once", st)
	}
}

// TestVersion1IsNeverReused: a process of version 1 is killed with its
// worker; from the second start of a worker name on, the next worker of
// that name gets a spare started ahead for it, with its name in the
// hello; and its deliveries carry no database (a field version 1 does not
// have).
func TestVersion1IsNeverReused(t *testing.T) {
	db := openDB(t)
	pl := fakePool(t, "remember", "", 0)
	for i := range 4 {
		f, c, err := pl.Worker("w1", nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := points(t, f, db, msg("e1", "u1", 5)); strings.Join(got, "|") != "w1 delivery 1 on " {
			t.Errorf("start %d: points %q, want a fresh process for w1", i+1, got)
		}
		c.Close()
	}
	if got := ledger(t, db); got != "e1=5 e1=5 e1=5 e1=5" {
		t.Errorf("ledger %q: each worker's process must be a fresh one", got)
	}
	if st := pl.Stats(); st.Reused != 0 || st.Spares != 2 {
		t.Errorf("stats %+v, want no reuse and 2 workers served by spares", st)
	}
}

// TestAProcessThatIgnoresResetIsCaught: a process that declares reset but
// keeps what it remembered plays one scenario differently the second time
// (it skips the events it remembers): replaying a scenario twice, which a
// deterministic consumer passes, catches it. The same process honouring
// reset replays identically.
func TestAProcessThatIgnoresResetIsCaught(t *testing.T) {
	s := &scenario.Scenario{Version: 1, Workers: 2,
		Policy: scenario.Policy{MaxAttempts: 3, BackoffMs: 100, MaxBackoffMs: 1000, AckTimeoutMs: 1000},
		Events: []scenario.Event{{ID: "e1", User: "u1", Amount: 5}, {ID: "e2", User: "u2", Amount: 7}}}
	for _, c := range []struct {
		reset string
		same  bool
	}{{"clear", true}, {"keep", false}} {
		t.Run(c.reset, func(t *testing.T) {
			pl := fakePool(t, "remember", c.reset, 0)
			con := consumertest.Consumer{Name: "remember", Schema: schema, Worker: pl.Worker,
				Effects: consumertest.PerEvent("SELECT event_id, amount_cents FROM ledger")}
			var traces [2]string
			for i := range traces {
				res, err := consumertest.Replay(con, s)
				if err != nil {
					t.Fatal(err)
				}
				traces[i] = strings.Join(res.Outcome.Trace.Lines(), "\n")
			}
			if same := traces[0] == traces[1]; same != c.same {
				t.Errorf("two plays of one scenario alike: %v, want %v\n%s\n---\n%s", same, c.same, traces[0], traces[1])
			}
			if st := pl.Stats(); st.Reused == 0 {
				t.Errorf("stats %+v: the second play must reuse processes", st)
			}
		})
	}
}

// TestResetFailures: a process that dies on a reset, answers it with
// garbage, or declares reset without speaking version 2 is an *Error of
// the Worker call, and the pool starts nothing more.
func TestResetFailures(t *testing.T) {
	for _, c := range []struct {
		reset string
		says  []string
	}{
		{"die", []string{"reset (for worker w1)", "died", "exited with status 4", "reset failed: boom"}},
		{"garbage", []string{"reset (for worker w1)", "garbage", "not a reset"}},
		{"v1", []string{"hello", `declares "reset" in a hello of protocol version 1`}},
	} {
		t.Run(c.reset, func(t *testing.T) {
			pl := fakePool(t, "ok", c.reset, 0)
			_, _, err := pl.Worker("w1", nil)
			wantError(t, err, 0, c.says...)
			if _, _, again := pl.Worker("w2", nil); again == nil || !strings.Contains(again.Error(), "not starting") {
				t.Errorf("the Worker after the failure: %v", again)
			}
		})
	}
}

// TestPoolClose: Close kills every process, a worker still served
// included; nothing starts after.
func TestPoolClose(t *testing.T) {
	db := openDB(t)
	pl := fakePool(t, "ok", "clear", 0)
	f, _, err := pl.Worker("w1", nil)
	if err != nil {
		t.Fatal(err)
	}
	_, c2, err := pl.Worker("w2", nil)
	if err != nil {
		t.Fatal(err)
	}
	c2.Close() // waits in the pool
	pl.Close()
	err = mustPanic(t, f, db, msg("e1", "u1", 5))
	wantError(t, err, 0, "the pool was closed")
	if _, _, err := pl.Worker("w3", nil); err == nil || !strings.Contains(err.Error(), "closed") {
		t.Errorf("Worker after Close: %v", err)
	}
}

// TestPoolDeclareKeepsTheProcess: what Declare started serves the first
// worker.
func TestPoolDeclareKeepsTheProcess(t *testing.T) {
	pl := fakePool(t, "aggregate", "clear", 0)
	d, err := pl.Declare()
	if err != nil || d.Effects != "SELECT x FROM t" || !d.Aggregate {
		t.Fatalf("Declare = %+v, %v", d, err)
	}
	_, c, err := pl.Worker("w1", nil)
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	if st := pl.Stats(); st.Spares != 1 || st.Reused != 0 {
		t.Errorf("stats %+v, want the declaring process to serve the first worker", st)
	}
}

// TestAPoolsCounterexampleIsPlayedOnFreshProcesses: a pool whose
// processes declare reset offers fresh processes to the harness
// (handler.FreshWorkers), which plays a counterexample on them before it
// reports it. The remembering fake keeps what it remembered across a
// reset ("keep"): what it then skips, fresh processes credit, and the
// hunt reports bad input naming the reset rather than a broken law; a
// failure it does report breaks its law on fresh processes too. A pool
// that reuses no process offers none.
func TestAPoolsCounterexampleIsPlayedOnFreshProcesses(t *testing.T) {
	pl := fakePool(t, "remember", "keep", 0)
	con := consumertest.Consumer{Name: "remember", Schema: schema, Worker: pl.Worker,
		Effects: consumertest.PerEvent("SELECT event_id, amount_cents FROM ledger")}
	res, err := consumertest.Hunt(con, consumertest.Checks(40), consumertest.Seed(1), consumertest.CorpusDir(""))
	switch {
	case err != nil:
		if !errors.Is(err, consumertest.ErrBadInput) || !strings.Contains(err.Error(), "keeps state across scenarios") {
			t.Fatalf("want bad input naming the reset, got %v", err)
		}
		t.Log(err)
	case res.Failed:
		fresh := fakePool(t, "remember", "keep", -1)
		fc := con
		fc.Worker = fresh.Worker
		again, err := consumertest.Replay(fc, res.Scenario)
		if err != nil || !again.Failed || again.Law != res.Law {
			t.Fatalf("a counterexample reported that fresh processes do not break (%v):\n%s\nfresh:\n%s", err, res.Report(), again.Report())
		}
	}
	if st := pl.Stats(); st.Reused == 0 {
		t.Errorf("stats %+v: the hunt must reuse processes", st)
	}
	_, closer, err := fakePool(t, "remember", "keep", -1).Worker("w1", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer closer.Close()
	if fw, ok := closer.(handler.FreshWorkers); !ok || fw.FreshWorker() != nil {
		t.Errorf("a pool that keeps no process idle offers fresh workers (%v): it reuses nothing", ok)
	}
}
