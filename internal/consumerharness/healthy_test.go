package consumerharness

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/idemcheck/idemcheck/impl/contract/handler"
	"github.com/idemcheck/idemcheck/internal/consumerharness/backend"
)

// immediate declares BEGIN IMMEDIATE (_txlock=immediate) and a busy
// timeout on SQLite, as teams often run it, for a schedule written for
// transactions that take the write lock at BEGIN and wait for it there
// (SQLite's defaults, DEFERRED and no busy timeout, take it at the first
// write and answer busy at once).
func immediate(c *config) {
	c.backend = backend.SQLite{Params: "_txlock=immediate&_pragma=busy_timeout(5000)"}
}

// neverApplies is a handler that never applies anything: every delivery fails.
func neverApplies(context.Context, *sql.DB, handler.Message) error {
	return errors.New("downstream refused")
}

func breachOf(res Result, law string) (Breach, bool) {
	for _, b := range res.Breaches {
		if b.Law == law {
			return b, true
		}
	}
	return Breach{}, false
}

func details(b Breach) string { return strings.Join(b.Details, "\n") }

// TestAHealthyEventTheConsumerGivesUpOnIsReported: a consumer that nacks
// every delivery sends each event to the DLQ after max_attempts, which
// nothing-lost accepts; healthy-applied names the event and every
// delivery, with what the consumer answered and that the harness did
// nothing to it.
func TestAHealthyEventTheConsumerGivesUpOnIsReported(t *testing.T) {
	c := adrConsumer()
	c.Handler = neverApplies
	res := lawOf(t, c, one)
	b, ok := breachOf(res, LawHealthyApplied)
	if !res.Failed || res.Law != LawHealthyApplied || !ok {
		t.Fatalf("want healthy-applied broken first:\n%s", res.Report())
	}
	for i := 1; i <= DefaultPolicy.MaxAttempts; i++ {
		want := fmt.Sprintf(`attempt %d of e1 (offset 0, produced) to w1 at t=`, i)
		if !strings.Contains(details(b), want) {
			t.Errorf("the report does not list %q:\n%s", want, res.Report())
		}
	}
	for _, want := range []string{`e1 (user u1, 100 cents) is in the dead-letter queue once quiet`, `answered nack "downstream refused"; the harness did nothing to it`,
		"dead-lettered for spent attempts: offset 0 after 4 attempt(s)"} {
		if !strings.Contains(details(b), want) {
			t.Errorf("the report does not say %q:\n%s", want, res.Report())
		}
	}
	if _, lost := breachOf(res, LawNothingLost); lost {
		t.Errorf("a dead-lettered event is reported lost too:\n%s", res.Report())
	}
}

// TestTheHarnessFaultsExcuseTheDLQ: when the harness's own faults spent
// every attempt (injected failures, a crash and its ack timeout), the
// healthy event's DLQ entry is legitimate, even for a consumer that would
// never apply it; each delivery records its fault.
func TestTheHarnessFaultsExcuseTheDLQ(t *testing.T) {
	c := adrConsumer()
	c.Handler = neverApplies
	twoFails := &Scenario{Version: 1, Workers: 1, Policy: Policy{MaxAttempts: 2, BackoffMs: 100, MaxBackoffMs: 100, AckTimeoutMs: 5000},
		Events: one.Events, Steps: []Step{{Op: OpRun, Worker: 1}, {Op: OpRun, Worker: 1}, {Op: OpAdvance, Ms: 100}, {Op: OpRun, Worker: 1}}}
	// neverApplies makes no call: injected failures need one. A handler that
	// begins a transaction first makes it.
	c.Handler = func(ctx context.Context, db *sql.DB, m handler.Message) error {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		defer tx.Rollback()
		return neverApplies(ctx, db, m)
	}
	res := lawOf(t, c, twoFails)
	if _, ok := breachOf(res, LawHealthyApplied); !ok {
		t.Fatalf("without faults the consumer must be flagged:\n%s", res.Report())
	}
	twoFails.Steps = []Step{{Op: OpRun, Worker: 1}, {Op: OpFail, Worker: 1}, {Op: OpRun, Worker: 1}, {Op: OpAdvance, Ms: 100},
		{Op: OpRun, Worker: 1}, {Op: OpFail, Worker: 1}}
	res = lawOf(t, c, twoFails)
	if res.Failed {
		t.Fatalf("the harness's injected failures spent every attempt, yet:\n%s", res.Report())
	}
	ds := res.Outcome.Deliveries
	if len(ds) < 2 || ds[0].Answer != AnswerNack || !ds[0].Settled || len(ds[0].Faults) != 1 || ds[0].Faults[0].Kind != FaultInjected ||
		!strings.HasPrefix(ds[0].Faults[0].At, "begin") || ds[1].Attempt != 2 || ds[1].Faults[0].Kind != FaultInjected {
		t.Fatalf("deliveries recorded: %+v", ds)
	}
	crashed := &Scenario{Version: 1, Workers: 1, Policy: Policy{MaxAttempts: 1, BackoffMs: 100, MaxBackoffMs: 100, AckTimeoutMs: 5000},
		Events: one.Events, Steps: []Step{{Op: OpRun, Worker: 1}, {Op: OpCrash, Worker: 1}}}
	res = lawOf(t, c, crashed)
	if res.Failed {
		t.Fatalf("a crash spent the only attempt, yet:\n%s", res.Report())
	}
	d := res.Outcome.Deliveries[0]
	kinds := []FaultKind{}
	for _, f := range d.Faults {
		kinds = append(kinds, f.Kind)
	}
	if d.Answer != "" || !slices.Equal(kinds, []FaultKind{FaultCrash, FaultAckTimeout}) {
		t.Fatalf("the crashed delivery: %+v", d)
	}
	if s := d.String(); !strings.Contains(s, "no answer (it crashed first); the harness caused: crash at begin, ack timeout") {
		t.Fatalf("the crashed delivery reads %q", s)
	}
}

// TestAStalledWorkersAckTimeoutIsAFault: a worker the schedule does not
// move before its ack deadline loses the delivery to a redelivery; the
// first delivery records the ack timeout.
func TestAStalledWorkersAckTimeoutIsAFault(t *testing.T) {
	s := &Scenario{Version: 1, Workers: 2, Policy: DefaultPolicy, Events: one.Events,
		Steps: []Step{{Op: OpRun, Worker: 1}, {Op: OpAdvance, Ms: 6000}, {Op: OpRun, Worker: 2}}}
	// With DEFERRED transactions the stalled worker's read would also meet
	// the redelivery's write lock (a deadlock, and a lock timeout).
	res, err := Replay(adrConsumer(), s, immediate)
	if err != nil {
		t.Fatal(err)
	}
	if res.Failed {
		t.Fatalf("flagged:\n%s", res.Report())
	}
	ds := res.Outcome.Deliveries
	if len(ds) < 2 || ds[0].Worker != "w1" || len(ds[0].Faults) != 1 || ds[0].Faults[0].Kind != FaultAckTimeout || ds[1].Worker != "w2" || ds[1].Attempt != 2 {
		t.Fatalf("deliveries recorded: %+v", ds)
	}
}

// TestAForcedLockTimeoutIsAFault: a handler that waits, outside its own
// transaction, for the lock that transaction holds gets the lock timeout
// the scheduler forces, but no excuse, though the other worker waits
// behind it: the deadlock is of its own making. It never applies an event
// and is flagged. (A deadlock between workers is a fault of the harness:
// TestPostgresDeadlockIsResolvedNotHung.)
func TestAForcedLockTimeoutIsAFault(t *testing.T) {
	c := adrConsumer()
	c.Handler = func(ctx context.Context, db *sql.DB, m handler.Message) error {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		defer tx.Rollback()
		// Outside the transaction, on another connection: it waits for the
		// transaction's own lock.
		if _, err := db.ExecContext(ctx, `INSERT INTO ledger VALUES (?, ?)`, m.EventID, m.Event.AmountCents); err != nil {
			return err
		}
		return tx.Commit()
	}
	s := &Scenario{Version: 1, Workers: 2, Policy: DefaultPolicy, Events: one.Events,
		Steps: []Step{{Op: OpDuplicate, Pick: 0}, {Op: OpRun, Worker: 1}, {Op: OpRun, Worker: 2}, {Op: OpRun, Worker: 1},
			{Op: OpRun, Worker: 2}, {Op: OpRun, Worker: 1}}}
	// The transaction holds the lock from its BEGIN (a DEFERRED one would
	// hold none, having run nothing).
	res, err := Replay(c, s, immediate)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(res.Outcome.Trace.String(), "gives up waiting") {
		t.Fatalf("no lock wait was given up:\n%s", res.Outcome.Trace)
	}
	var faulted, alone int
	for _, d := range res.Outcome.Deliveries {
		switch {
		case slices.ContainsFunc(d.Faults, func(f Fault) bool { return f.Kind == FaultLockTimeout }):
			faulted++
		case d.Answer == AnswerNack && strings.Contains(d.Error, "locked"):
			alone++
		}
	}
	if faulted != 0 || alone == 0 {
		t.Fatalf("want no lock timeout of a deadlock the handler made recorded as a fault of the harness: %d faulted, %d not\n%s", faulted, alone, res.Report())
	}
	if _, ok := breachOf(res, LawHealthyApplied); !ok {
		t.Fatalf("a handler that deadlocks on itself never applies an event, yet:\n%s", res.Report())
	}
}

// TestADuplicateNackedWhileItsTwinAppliedIsFine: a consumer that nacks a
// duplicate on the unique violation sends that copy to the DLQ, but the
// event is applied by the other copy: no law is broken.
func TestADuplicateNackedWhileItsTwinAppliedIsFine(t *testing.T) {
	c := adrConsumer()
	c.Handler = func(ctx context.Context, db *sql.DB, m handler.Message) error {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		defer tx.Rollback()
		if _, err := tx.ExecContext(ctx, `INSERT INTO processed_events VALUES (?)`, m.EventID); err != nil {
			return err // a unique violation too: retried, then dead-lettered
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO ledger VALUES (?, ?)`, m.EventID, m.Event.AmountCents); err != nil {
			return err
		}
		return tx.Commit()
	}
	s := &Scenario{Version: 1, Workers: 1, Policy: DefaultPolicy, Events: one.Events, Steps: []Step{{Op: OpDuplicate, Pick: 0}}}
	res := lawOf(t, c, s)
	if res.Failed {
		t.Fatalf("flagged:\n%s", res.Report())
	}
	if len(res.Outcome.DLQQuiet) != 1 || res.Outcome.DLQQuiet[0].Offset != 1 {
		t.Fatalf("want the duplicate's copy dead-lettered, DLQ %+v", res.Outcome.DLQQuiet)
	}
}

// TestPoisonMustBeDeadLetteredNeverApplied: a poison event acked without
// its effect, or applied, breaks healthy-applied.
func TestPoisonMustBeDeadLetteredNeverApplied(t *testing.T) {
	poison := &Scenario{Version: 1, Workers: 1, Policy: DefaultPolicy, Events: []Event{{ID: "e1", User: "u1", Amount: 0, Poison: true}}}
	skip := adrConsumer()
	skip.Handler = func(context.Context, *sql.DB, handler.Message) error { return nil }
	res := lawOf(t, skip, poison)
	if b, ok := breachOf(res, LawHealthyApplied); !ok || res.Law != LawHealthyApplied || !strings.Contains(details(b), "e1 (poison: 0 cents) is not in the dead-letter queue once quiet") {
		t.Fatalf("poison acked and skipped:\n%s", res.Report())
	}
	apply := adrConsumer()
	apply.Handler = func(ctx context.Context, db *sql.DB, m handler.Message) error {
		_, err := db.ExecContext(ctx, `INSERT INTO ledger VALUES (?, ?)`, m.EventID, m.Event.AmountCents)
		if err == nil {
			err = handler.Poison(errors.New("rejected after all"))
		}
		return err
	}
	res = lawOf(t, apply, poison)
	if b, ok := breachOf(res, LawHealthyApplied); !ok || !strings.Contains(details(b), "e1 (poison: 0 cents) was applied 1 time(s) (rows (e1, 0)) once quiet") {
		t.Fatalf("poison applied and dead-lettered:\n%s", res.Report())
	}
	if res := lawOf(t, adrConsumer(), poison); res.Failed {
		t.Fatalf("the ADR consumer dead-letters poison, yet:\n%s", res.Report())
	}
}

const accountsSchema = `
CREATE TABLE accounts (user_id TEXT PRIMARY KEY, balance_cents INTEGER NOT NULL);
INSERT INTO accounts VALUES ('u1', 5000);
CREATE TABLE processed_events (event_id TEXT PRIMARY KEY);`

// credit is a correct balance consumer, but for what it does with the
// events skip says to skip (it nacks them) and with poison (it credits
// it when creditPoison).
func credit(skip string, creditPoison bool) handler.Func {
	return func(ctx context.Context, db *sql.DB, m handler.Message) error {
		if m.EventID == skip {
			return errors.New("not now")
		}
		if m.Event.AmountCents <= 0 && !creditPoison {
			return handler.Poison(errors.New("bad amount"))
		}
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		defer tx.Rollback()
		res, err := tx.ExecContext(ctx, `INSERT INTO processed_events VALUES (?) ON CONFLICT DO NOTHING`, m.EventID)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return nil
		}
		if _, err := tx.ExecContext(ctx, `UPDATE accounts SET balance_cents = balance_cents + ? WHERE user_id = ?`, m.Event.AmountCents, m.Event.UserID); err != nil {
			return err
		}
		return tx.Commit()
	}
}

// TestAggregateTotalsAccountForEveryEvent: a total missing a healthy
// event the consumer dead-lettered on its own, or holding a poison
// event's amount, breaks healthy-applied; the report names the event.
func TestAggregateTotalsAccountForEveryEvent(t *testing.T) {
	c := Consumer{Name: "balance", Schema: accountsSchema, Effects: Aggregate("SELECT user_id, balance_cents FROM accounts")}
	s := &Scenario{Version: 1, Workers: 1, Policy: DefaultPolicy,
		Events: []Event{{ID: "e1", User: "u1", Amount: 100}, {ID: "e2", User: "u1", Amount: 200}, {ID: "e3", User: "u1", Amount: -50, Poison: true}}}
	c.Handler = credit("", false)
	if res := lawOf(t, c, s); res.Failed {
		t.Fatalf("the correct balance consumer is flagged:\n%s", res.Report())
	}
	c.Handler = credit("e2", false)
	res := lawOf(t, c, s)
	b, ok := breachOf(res, LawHealthyApplied)
	if !ok || res.Law != LawHealthyApplied || !strings.Contains(details(b), "u1: total 5100 once quiet, want 5300: it misses e2 (200 cents)") ||
		!strings.Contains(details(b), `attempt 4 of e2 (offset 1, produced) to w1`) {
		t.Fatalf("a total missing e2:\n%s", res.Report())
	}
	c.Handler = credit("", true)
	res = lawOf(t, c, s)
	b, ok = breachOf(res, LawHealthyApplied)
	if !ok || res.Law != LawHealthyApplied || !strings.Contains(details(b), "it holds poison e3 (-50 cents)") {
		t.Fatalf("a total holding poison e3:\n%s", res.Report())
	}
}

// TestHuntCountsTheScenariosPlayed: a passing hunt reports the scenarios
// rapid played (100 by default, not 1), and a failing one the scenarios
// played up to and including the first that failed.
func TestHuntCountsTheScenariosPlayed(t *testing.T) {
	res, err := Hunt(adrConsumer(), Seed(3))
	if err != nil || res.Failed {
		t.Fatalf("%v\n%s", err, res.Report())
	}
	if res.Checks != 100 || !strings.Contains(res.Report(), "no law broken in 100 scenario(s)") {
		t.Fatalf("a passing hunt at the default budget reports %d scenario(s):\n%s", res.Checks, res.Report())
	}
	if res, err := Hunt(adrConsumer(), Checks(37), Seed(3)); err != nil || res.Checks != 37 {
		t.Fatalf("Checks(37) reports %d (%v)", res.Checks, err)
	}
	// The consumer breaks from its fifth scenario on: each scenario starts
	// worker w1 once, as w1#1.
	scenarios := 0
	c := adrConsumer()
	c.Handler = nil
	c.Worker = func(id string, _ *sql.DB) (handler.Func, io.Closer, error) {
		if id == "w1#1" {
			scenarios++
		}
		if scenarios >= 5 {
			return neverApplies, nil, nil
		}
		return adr, nil, nil
	}
	res, err = Hunt(c, Seed(3), NoReduce())
	if err != nil || !res.Failed {
		t.Fatalf("%v\n%s", err, res.Report())
	}
	if res.Checks != 5 {
		t.Fatalf("the hunt failed at its fifth scenario, but reports %d", res.Checks)
	}
}

// TestTheLaziestConsumersFail: a consumer that does no work in any of the
// three lazy ways fails a hunt at the default budget. It acks without
// applying, nacks every delivery, or dead-letters every message as poison.
func TestTheLaziestConsumersFail(t *testing.T) {
	lazy := map[string]handler.Func{
		"acks without applying": func(context.Context, *sql.DB, handler.Message) error { return nil },
		"nacks everything":      func(context.Context, *sql.DB, handler.Message) error { return errors.New("try again") },
		"poisons everything":    func(context.Context, *sql.DB, handler.Message) error { return handler.Poison(errors.New("rejected")) },
	}
	for name, h := range lazy {
		t.Run(name, func(t *testing.T) {
			c := adrConsumer()
			c.Handler = h
			res, err := Hunt(c, Seed(1))
			if err != nil {
				t.Fatal(err)
			}
			if !res.Failed {
				t.Fatalf("a consumer that %s passed %d scenarios", name, res.Checks)
			}
			t.Logf("%s: %s after %d scenario(s)", name, res.Law, res.Checks)
		})
	}
}
