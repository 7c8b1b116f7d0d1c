package consumerproc_test

import (
	"context"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/idemcheck/idemcheck/consumertest"
	"github.com/idemcheck/idemcheck/consumertest/scenario"
	"github.com/idemcheck/idemcheck/impl/adapter/consumerproc"
)

// TestInABubble: a harness may run deliveries in a testing/synctest bubble
// (consumertest.Check does). An idle process must not keep the bubble's
// clock from moving, deliveries must work, and a hang must still end with
// the timeout, on the machine's clock.
func TestInABubble(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		db := openDB(t)
		f, c, err := fakeWorker("ok")("w1", nil)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		start := time.Now()
		time.Sleep(time.Hour) // returns at once: nothing in the bubble waits on the process
		if time.Since(start) != time.Hour {
			t.Errorf("the bubble's clock moved by %v", time.Since(start))
		}
		if err := f(context.Background(), db, msg("e1", "u1", 5)); err != nil {
			t.Fatal(err)
		}
		h, hc, err := fakeWorker("hang-deliver")("w1", nil)
		if err != nil {
			t.Fatal(err)
		}
		defer hc.Close()
		err = mustPanic(t, h, db, msg("e2", "u1", 5))
		wantError(t, err, 0, "no answer within 500ms")
	})
}

// TestPoolInBubbles: consumertest.Check plays each scenario in a bubble of
// its own; a pooled process outlives the bubble it was started in and
// serves the next ones. Neither it nor its reader is a goroutine of the
// bubble (which would panic as the bubble ends, or be reported as the
// handler's leak), and the pool's reaper is no timer of a bubble.
func TestPoolInBubbles(t *testing.T) {
	pl := fakePool(t, "ok", "clear", 0)
	c := consumertest.Consumer{Name: "pooled", Schema: schema, Worker: pl.Worker,
		Effects: consumertest.PerEvent("SELECT event_id, amount_cents FROM ledger")}
	consumertest.Check(t, c, consumertest.Checks(10), consumertest.Seed(1))
	if st := pl.Stats(); st.Reused == 0 || st.Started > consumerproc.DefaultMaxIdle {
		t.Errorf("stats %+v: want the processes of the first scenario reused by the next ones", st)
	}
}

// TestNowMsIsTheScenariosTime: under the harness, in every entry point
// (here Replay and Hunt, neither of which has a *testing.T), a delivery's
// nowMs is the scenario's time: 2000-01-01T00:00:00Z at its start, moving
// with it.
func TestNowMsIsTheScenariosTime(t *testing.T) {
	c := consumertest.Consumer{
		Name:    "clock-process",
		Schema:  schema,
		Worker:  fakeWorker("ok"),
		Effects: consumertest.PerEvent("SELECT event_id, amount_cents FROM ledger"),
	}
	s := &scenario.Scenario{Version: 1, Workers: 1, Policy: scenario.DefaultPolicy,
		Events: []scenario.Event{{ID: "e1", User: "clock", Amount: 100}, {ID: "e2", User: "clock", Amount: 200}},
		Steps:  []scenario.Step{{Op: scenario.OpRun, Worker: 1}, {Op: scenario.OpAdvance, Ms: 1500}}}
	res, err := consumertest.Replay(c, s)
	if err != nil || res.Failed {
		t.Fatalf("%v\n%s", err, res.Report())
	}
	trace := res.Outcome.Trace.String()
	if !strings.Contains(trace, "w1 call nowMs 946684800000") || !strings.Contains(trace, "w1 call nowMs 946684801500") {
		t.Fatalf("nowMs is not the scenario's time:\n%s", trace)
	}
	hunt, err := consumertest.Hunt(c, consumertest.Checks(5), consumertest.Seed(1))
	if err != nil || hunt.Failed || len(hunt.MachineClock) > 0 {
		t.Fatalf("%v\n%s", err, hunt.Report())
	}
}
