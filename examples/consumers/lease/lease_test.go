package lease_test

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/consumertest"
	"github.com/idemcheck/idemcheck/consumertest/laws"
	"github.com/idemcheck/idemcheck/consumertest/scenario"
	"github.com/idemcheck/idemcheck/examples/consumers/lease"
	"github.com/idemcheck/idemcheck/impl/contract/handler"
)

func leaseConsumer() consumertest.Consumer {
	return consumertest.Consumer{
		Name:    "lease",
		Schema:  lease.Schema,
		Handler: lease.Handle,
		Effects: consumertest.PerEvent("SELECT event_id, amount_cents FROM ledger"),
	}
}

// teamSQLite is SQLite as a team running claims with a lease runs it:
// BEGIN IMMEDIATE and a busy timeout. (With SQLite's defaults the
// unfenced lease is caught all the same, earlier, by healthy-applied: a
// worker answered busy at its commit leaves its claim to block the event
// until its lease runs out, past the broker's attempts.)
var teamSQLite = consumertest.SQLite("_txlock=immediate&_pragma=busy_timeout(5000)")

// TestLeaseWithoutFencingCreditsTwice: Hunt at its default budget (100
// scenarios) finds the slow owner's unfenced commit, and the
// counterexample replays with the same trace, from the result and from
// the file it was saved in.
func TestLeaseWithoutFencingCreditsTwice(t *testing.T) {
	c := leaseConsumer()
	res, err := consumertest.Hunt(c, consumertest.Seed(1), consumertest.CorpusDir(t.TempDir()), teamSQLite)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Failed || res.Law != laws.SingleCredit || res.Scenario.Size() > 8 {
		t.Fatalf("want single-credit broken by a scenario of at most 8 steps, got:\n%s", res.Report())
	}
	trace := res.Outcome.Trace.String()
	if !strings.Contains(trace, "time moves") || !strings.Contains(trace, "POST /payments") {
		t.Fatalf("the counterexample does not stall the owner at the provider:\n%s", res.Report())
	}
	again, err := consumertest.Replay(c, res.Scenario, teamSQLite)
	if err != nil {
		t.Fatal(err)
	}
	if got := again.Outcome.Trace.String(); got != trace || again.Law != res.Law {
		t.Fatalf("the replay differs:\n%s\nthen:\n%s", trace, got)
	}
	saved, err := scenario.Load(res.CorpusFile)
	if err != nil {
		t.Fatal(err)
	}
	again, err = consumertest.Replay(c, saved, teamSQLite)
	if err != nil || again.Outcome.Trace.String() != trace {
		t.Fatalf("the saved counterexample replays differently (%v):\n%s", err, again.Report())
	}
	t.Logf("found after %d scenario(s):\n%s", res.Checks, res.Report())
}

// TestCheckCatchesTheLeaseAtItsDefaults runs consumertest.Check, at its
// default budget, in a child process, and expects it to fail the test.
func TestCheckCatchesTheLeaseAtItsDefaults(t *testing.T) {
	if os.Getenv("LEASE_CHECK_CHILD") != "" {
		consumertest.Check(t, leaseConsumer(), consumertest.CorpusDir(os.Getenv("LEASE_CHECK_CHILD")), teamSQLite)
		return
	}
	for _, seed := range []string{"1", "2"} {
		cmd := exec.Command(os.Args[0], "-test.run", "^TestCheckCatchesTheLeaseAtItsDefaults$", "-rapid.seed", seed)
		cmd.Env = append(os.Environ(), "LEASE_CHECK_CHILD="+t.TempDir())
		out, err := cmd.CombinedOutput()
		if err == nil || !strings.Contains(string(out), `consumer "lease" breaks single-credit`) {
			t.Fatalf("seed %s: Check did not fail the test with single-credit (%v):\n%s", seed, err, out)
		}
	}
}

// fenced is the consumer as it should be: a fencing token bumped at every
// claim and takeover, which the final commit requires.
func fenced(ctx context.Context, db *sql.DB, m handler.Message) error {
	if m.Event.AmountCents <= 0 {
		return handler.Poison(errors.New("bad amount"))
	}
	now := time.Now()
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	var status string
	var until, token int64
	err = tx.QueryRowContext(ctx, `SELECT status, lease_until, token FROM claims WHERE event_id = $1`, m.EventID).Scan(&status, &until, &token)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		token = 1
		_, err = tx.ExecContext(ctx, `INSERT INTO claims (event_id, status, lease_until, token) VALUES ($1, 'processing', $2, 1)`, m.EventID, now.Add(lease.LeaseFor).UnixMilli())
	case err != nil:
		return err
	case status == "done":
		return nil
	case until > now.UnixMilli():
		return lease.ErrClaimed
	default:
		token++
		_, err = tx.ExecContext(ctx, `UPDATE claims SET lease_until = $2, token = $3 WHERE event_id = $1`, m.EventID, now.Add(lease.LeaseFor).UnixMilli(), token)
	}
	if err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	handler.Point(ctx, "POST /payments/"+m.Event.OrderID+"/capture")
	if err := complete(ctx, db, m, token); err != nil {
		// A transient failure: give the claim back at once, so that the
		// redelivery need not wait for the lease to run out (it would
		// outlast the broker's retries and dead-letter a healthy event).
		_, _ = db.ExecContext(ctx, `UPDATE claims SET lease_until = 0 WHERE event_id = $1 AND token = $2 AND status = 'processing'`, m.EventID, token)
		return err
	}
	return nil
}

// complete credits the ledger and marks the claim done, if the claim is
// still this worker's.
func complete(ctx context.Context, db *sql.DB, m handler.Message, token int64) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	res, err := tx.ExecContext(ctx, `UPDATE claims SET status = 'done' WHERE event_id = $1 AND token = $2`, m.EventID, token)
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		return err // fenced off: the worker that took over does the work
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO ledger (event_id, user_id, amount_cents) VALUES ($1, $2, $3)`,
		m.EventID, m.Event.UserID, m.Event.AmountCents); err != nil {
		return err
	}
	return tx.Commit()
}

// TestTheFencedLeaseIsNeverFlagged is the control: the same claims, lease
// and provider call, fenced, passes what catches the unfenced one. It runs
// as a team would run it on SQLite: BEGIN IMMEDIATE and a busy timeout.
// (With SQLite's defaults, deferred BEGIN and no busy timeout, two workers
// that read then write deadlock, and the one answered busy can fail to
// give its claim back, which then blocks the event until its lease runs
// out, past the broker's attempts.)
func TestTheFencedLeaseIsNeverFlagged(t *testing.T) {
	consumertest.Check(t, consumertest.Consumer{
		Name:    "lease-fenced",
		Schema:  strings.Replace(lease.Schema, "lease_until BIGINT NOT NULL", "lease_until BIGINT NOT NULL, token BIGINT NOT NULL", 1),
		Handler: fenced,
		Effects: consumertest.PerEvent("SELECT event_id, amount_cents FROM ledger"),
	}, consumertest.Checks(500), teamSQLite)
}
