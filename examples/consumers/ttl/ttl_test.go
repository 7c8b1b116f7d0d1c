package ttl_test

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/idemcheck/idemcheck/consumertest"
	"github.com/idemcheck/idemcheck/consumertest/laws"
	"github.com/idemcheck/idemcheck/consumertest/scenario"
	"github.com/idemcheck/idemcheck/examples/consumers/ttl"
)

func ttlConsumer(d ttl.Dialect, window string) consumertest.Consumer {
	return consumertest.Consumer{
		Name:    "ttl",
		Schema:  ttl.Schema(d),
		Handler: ttl.Handler(d, window),
		Effects: consumertest.PerEvent("SELECT event_id, amount_cents FROM ledger"),
		Dedupe:  "SELECT event_id FROM processed_events",
	}
}

// pgDSN returns the PostgreSQL DSN, or skips.
func pgDSN(t *testing.T) string {
	t.Helper()
	dsn := os.Getenv(consumertest.PostgresEnv)
	if dsn == "" {
		t.Skipf("%s is not set: skipping the TTL consumer on PostgreSQL", consumertest.PostgresEnv)
	}
	return dsn
}

// huntsTheShortWindow hunts the short window at Hunt's default budget
// (100 scenarios) and checks that the counterexample replays with the same
// trace, from the result and from its saved file.
func huntsTheShortWindow(t *testing.T, d ttl.Dialect, opts ...consumertest.Option) {
	t.Helper()
	c := ttlConsumer(d, ttl.Short)
	res, err := consumertest.Hunt(c, append(opts, consumertest.Seed(1), consumertest.CorpusDir(t.TempDir()))...)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Failed || res.Law != laws.SingleCredit || res.Scenario.Size() > 8 || len(res.MachineClock) > 0 {
		t.Fatalf("want single-credit broken by a scenario of at most 8 steps, on the scenario's clock, got:\n%s", res.Report())
	}
	trace := res.Outcome.Trace.String()
	if !strings.Contains(trace, "DELETE FROM processed_events") || !strings.Contains(trace, "time moves") {
		t.Fatalf("the counterexample does not clean up after time moved:\n%s", res.Report())
	}
	for _, from := range []string{"result", "file"} {
		s := res.Scenario
		if from == "file" {
			if s, err = scenario.Load(res.CorpusFile); err != nil {
				t.Fatal(err)
			}
		}
		again, err := consumertest.Replay(c, s, opts...)
		if err != nil {
			t.Fatal(err)
		}
		if got := again.Outcome.Trace.String(); got != trace || again.Law != res.Law {
			t.Fatalf("replayed from the %s, the trace differs:\n%s\nthen:\n%s", from, trace, got)
		}
	}
	t.Logf("found after %d scenario(s):\n%s", res.Checks, res.Report())
}

func TestAShortWindowCreditsTwice(t *testing.T) { huntsTheShortWindow(t, ttl.SQLite) }

func TestAShortWindowCreditsTwiceOnPostgres(t *testing.T) {
	huntsTheShortWindow(t, ttl.Postgres, consumertest.Postgres(pgDSN(t)))
}

func TestThePatternsThirtyDaysPass(t *testing.T) {
	consumertest.Check(t, ttlConsumer(ttl.SQLite, ttl.Long), consumertest.Checks(500))
}

func TestThePatternsThirtyDaysPassOnPostgres(t *testing.T) {
	consumertest.Check(t, ttlConsumer(ttl.Postgres, ttl.Long), consumertest.Checks(300), consumertest.Postgres(pgDSN(t)))
}

// TestCheckCatchesTheShortWindowAtItsDefaults runs consumertest.Check, at
// its default budget, in a child process, and expects it to fail.
func TestCheckCatchesTheShortWindowAtItsDefaults(t *testing.T) {
	if dir := os.Getenv("TTL_CHECK_CHILD"); dir != "" {
		consumertest.Check(t, ttlConsumer(ttl.SQLite, ttl.Short), consumertest.CorpusDir(dir))
		return
	}
	for _, seed := range []string{"1", "2"} {
		cmd := exec.Command(os.Args[0], "-test.run", "^TestCheckCatchesTheShortWindowAtItsDefaults$", "-rapid.seed", seed)
		cmd.Env = append(os.Environ(), "TTL_CHECK_CHILD="+t.TempDir())
		out, err := cmd.CombinedOutput()
		if err == nil || !strings.Contains(string(out), `consumer "ttl" breaks single-credit`) {
			t.Fatalf("seed %s: Check did not fail the test with single-credit (%v):\n%s", seed, err, out)
		}
	}
}
