package consumerharness

import (
	"context"
	"database/sql"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/idemcheck/idemcheck/impl/contract/handler"
	"github.com/idemcheck/idemcheck/internal/situation"
)

// The consumers of a log broker these tests play: one that keeps its
// positions in the effects' transaction (correct), and variants each
// breaking one law.

const logSchema = `
CREATE TABLE ledger (seq INTEGER PRIMARY KEY AUTOINCREMENT, event_id TEXT NOT NULL, amount_cents INTEGER NOT NULL);
CREATE TABLE positions (part INTEGER PRIMARY KEY, next INTEGER NOT NULL);`

// ownPositions applies the records past the stored position, in the
// order given (reversed when reverse is set), and moves the position
// from the value it read, in one transaction.
func ownPositions(reverse bool) *handler.LogConsumer {
	read := func(ctx context.Context, q interface {
		QueryRowContext(context.Context, string, ...any) *sql.Row
	}, p int) (int64, error) {
		var n int64
		err := q.QueryRowContext(ctx, `SELECT next FROM positions WHERE part = ?`, p).Scan(&n)
		if errors.Is(err, sql.ErrNoRows) {
			return 0, nil
		}
		return n, err
	}
	return &handler.LogConsumer{
		MaxBatch: 2,
		Ordered:  true,
		Assigned: func(ctx context.Context, db *sql.DB, ps []int) (map[int]int64, error) {
			out := map[int]int64{}
			for _, p := range ps {
				n, err := read(ctx, db, p)
				if err != nil {
					return nil, err
				}
				out[p] = n
			}
			return out, nil
		},
		Handle: func(ctx context.Context, db *sql.DB, rs []handler.Record, log handler.Offsets) error {
			p, last := rs[0].Partition, rs[len(rs)-1].Offset
			tx, err := db.BeginTx(ctx, nil)
			if err != nil {
				return err
			}
			defer tx.Rollback()
			n, err := read(ctx, tx, p)
			if err != nil || n > last {
				return err
			}
			todo := slices.Clone(rs)
			if reverse {
				slices.Reverse(todo)
			}
			for _, r := range todo {
				if r.Offset < n {
					continue
				}
				if _, err := tx.ExecContext(ctx, `INSERT INTO ledger (event_id, amount_cents) VALUES (?, ?)`, r.EventID, r.Event.AmountCents); err != nil {
					return err
				}
			}
			res, err := tx.ExecContext(ctx, `INSERT INTO positions VALUES (?, ?) ON CONFLICT (part) DO UPDATE SET next = excluded.next WHERE positions.next = ?`, p, last+1, n)
			if err != nil {
				return err
			}
			if k, err := res.RowsAffected(); err != nil || k != 1 {
				return errors.New("the position moved")
			}
			if err := tx.Commit(); err != nil {
				return err
			}
			_ = log.Commit(ctx, p, last+1) // for the lag only
			return nil
		},
	}
}

func logConsumer(lc *handler.LogConsumer) Consumer {
	return Consumer{Name: "log", Schema: logSchema, Log: lc, Effects: PerEvent("SELECT event_id, amount_cents FROM ledger ORDER BY seq")}
}

// A log scenario: two partitions, three events of one user (one
// partition), one of another.
func logScenario(steps ...Step) *Scenario {
	return &Scenario{Version: 1, Workers: 2, Partitions: 2, Policy: DefaultPolicy,
		Events: []Event{{ID: "e1", User: "u1", Amount: 100}, {ID: "e2", User: "u1", Amount: 200}, {ID: "e3", User: "u2", Amount: 300}, {ID: "e4", User: "u1", Amount: 400}},
		Steps:  steps}
}

// The correct consumer is never flagged, whatever the schedule; each law
// of the log is broken by a consumer made to break it.
func TestLogLawsFailOnlyOnBrokenConsumers(t *testing.T) {
	res, err := Hunt(logConsumer(ownPositions(false)), Checks(400), Seed(3))
	if err != nil {
		t.Fatal(err)
	}
	if res.Failed {
		t.Fatalf("a correct log consumer was flagged:\n%s", res.Report())
	}
	if res.Coverage[situation.LogRebalance] == 0 || res.Coverage[situation.LogCommitFenced] == 0 {
		t.Errorf("the campaign reached no rebalance or no fenced commit: %v", res.Coverage)
	}

	res, err = Hunt(logConsumer(ownPositions(true)), Checks(400), Seed(3))
	if err != nil {
		t.Fatal(err)
	}
	if !res.Failed || res.Law != LawPartitionOrder {
		t.Fatalf("want partition-order broken by a consumer that reverses its batches, got:\n%s", res.Report())
	}

	commitFirst := ownPositions(false)
	apply := commitFirst.Handle
	commitFirst.Handle = func(ctx context.Context, db *sql.DB, rs []handler.Record, log handler.Offsets) error {
		last := rs[len(rs)-1]
		if err := log.Commit(ctx, last.Partition, last.Offset+1); err != nil {
			return err
		}
		return apply(ctx, db, rs, log)
	}
	res, err = Hunt(logConsumer(commitFirst), Checks(400), Seed(3))
	if err != nil {
		t.Fatal(err)
	}
	if !res.Failed || res.Law != LawCommitAfterApply || !strings.Contains(res.Breaches[0].Details[0], "commits p") {
		t.Fatalf("want commit-after-apply broken, naming the commit, got:\n%s", res.Report())
	}
}

// The same log scenario gives the same trace; its JSON form carries the
// partitions and the assignment and reads back.
func TestLogScenarioIsData(t *testing.T) {
	s := logScenario(Step{Op: OpRun, Worker: 1}, Step{Op: OpRun, Worker: 1}, Step{Op: OpRun, Worker: 1}, Step{Op: OpRebalance, Worker: 2, Pick: 1},
		Step{Op: OpRun, Worker: 1}, Step{Op: OpCrash, Worker: 2}, Step{Op: OpReplay}, Step{Op: OpFail, Worker: 1})
	s.Assignment = []int{2, 1}
	var traces []string
	for range 2 {
		res, err := Replay(logConsumer(ownPositions(false)), s.clone())
		if err != nil {
			t.Fatal(err)
		}
		if res.Failed {
			t.Fatalf("flagged:\n%s", res.Report())
		}
		traces = append(traces, res.Outcome.Trace.String())
	}
	if traces[0] != traces[1] {
		t.Fatalf("one scenario, two traces:\n%s\n---\n%s", traces[0], traces[1])
	}
	if !strings.Contains(traces[0], "rebalances: p1 moves from w1 to w2") {
		t.Errorf("the trace does not name the rebalance:\n%s", traces[0])
	}
	b, err := s.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	back, err := UnmarshalScenario(b)
	if err != nil {
		t.Fatal(err)
	}
	if back.Partitions != 2 || !slices.Equal(back.Assignment, []int{2, 1}) || len(back.Steps) != len(s.Steps) {
		t.Fatalf("round trip lost the log's fields: %s", b)
	}
}

// What does not fit a log is refused with a message that names it.
func TestLogBadInput(t *testing.T) {
	bad := logScenario(Step{Op: OpDuplicate, Pick: 0})
	if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), "duplicate on a log broker") {
		t.Errorf("a duplicate on a log: %v", err)
	}
	bad = logScenario(Step{Op: OpRebalance, Worker: 1, Pick: 2})
	if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), "rebalance of partition 2 of 2") {
		t.Errorf("a rebalance of no partition: %v", err)
	}
	queue := &Scenario{Version: 1, Workers: 1, Policy: DefaultPolicy, Events: []Event{{ID: "e1", User: "u1", Amount: 100}}}
	if _, err := Replay(logConsumer(ownPositions(false)), queue); !errors.Is(err, ErrBadInput) || !strings.Contains(err.Error(), "no partitions") {
		t.Errorf("a queue scenario for a log consumer: %v", err)
	}
	if _, err := Replay(adrConsumer(), logScenario()); !errors.Is(err, ErrBadInput) || !strings.Contains(err.Error(), "no Log consumer") {
		t.Errorf("a log scenario for a queue consumer: %v", err)
	}
	both := logConsumer(ownPositions(false))
	both.Handler = adr
	if err := both.validate(); err == nil || !strings.Contains(err.Error(), "not several") {
		t.Errorf("a Log and a Handler: %v", err)
	}
}

// Every fuzzing input makes a valid log scenario.
func TestFuzzInputsMakeLogScenarios(t *testing.T) {
	for i := range 200 {
		data := []byte(strings.Repeat(string(rune('a'+i%26)), i%40))
		data = append(data, byte(i), byte(i*7), byte(i*13))
		if err := asLog(FuzzScenario(data, 16)).Validate(); err != nil {
			t.Fatalf("input %d: %v", i, err)
		}
	}
}

// A log counterexample saved as a corpus file loads and replays to the
// same law.
func TestLogCorpusFileReplays(t *testing.T) {
	commitFirst := ownPositions(false)
	apply := commitFirst.Handle
	commitFirst.Handle = func(ctx context.Context, db *sql.DB, rs []handler.Record, log handler.Offsets) error {
		if err := log.Commit(ctx, rs[0].Partition, rs[len(rs)-1].Offset+1); err != nil {
			return err
		}
		return apply(ctx, db, rs, log)
	}
	c := logConsumer(commitFirst)
	res, err := Hunt(c, Checks(50), Seed(1))
	if err != nil || !res.Failed {
		t.Fatalf("not caught: %v\n%s", err, res.Report())
	}
	path, err := SaveScenario(t.TempDir(), "log", res.Law, res.Summary(), res.Scenario, res.Outcome, res.Seed)
	if err != nil {
		t.Fatal(err)
	}
	s, err := LoadScenario(path)
	if err != nil {
		t.Fatal(err)
	}
	if s.Partitions == 0 {
		t.Fatalf("the file lost the partitions: %+v", s)
	}
	again, err := Replay(c, s)
	if err != nil || !again.Failed || again.Law != res.Law {
		t.Fatalf("the file replays to %q (%v), want %q", again.Law, err, res.Law)
	}
}

// A log run records a delivery per record of each fetched batch, with the
// faults the harness caused in it and the answer of Handle: what
// healthy-applied judges the consumer's own dead letters by.
func TestLogDeliveriesRecordFaults(t *testing.T) {
	s := logScenario(Step{Op: OpRun, Worker: 1}, Step{Op: OpRun, Worker: 1}, // w1 is assigned p1 (u1's partition)
		Step{Op: OpRun, Worker: 1, Pick: 1}, Step{Op: OpFail, Worker: 1}) // it fetches e1 and e2 of p1, and its begin fails
	s.Workers = 1
	lc := ownPositions(false)
	lc.Assigned = func(context.Context, *sql.DB, []int) (map[int]int64, error) { return nil, nil } // no call: it returns at the second step
	res, err := Replay(logConsumer(lc), s)
	if err != nil {
		t.Fatal(err)
	}
	if res.Failed {
		t.Fatalf("a correct log consumer was flagged:\n%s", res.Report())
	}
	var first []Delivery
	for _, d := range res.Outcome.Deliveries {
		if d.Attempt == 1 && (d.Event == "e1" || d.Event == "e2") {
			first = append(first, d)
		}
	}
	if len(first) != 2 || first[0].Offset != 0 || first[1].Offset != 1 {
		t.Fatalf("want the first fetch of e1 and e2 (offsets 0 and 1), got %+v", res.Outcome.Deliveries)
	}
	for _, d := range first {
		if !d.Faulted() || d.Faults[0].Kind != FaultInjected || d.Answer != AnswerNack || !d.Settled {
			t.Errorf("want %s's first fetch failed by the harness and nacked, got %s", d.Event, d)
		}
	}
	if !slices.ContainsFunc(res.Outcome.Deliveries, func(d Delivery) bool {
		return d.Event == "e1" && d.Attempt == 2 && d.Answer == AnswerAck && !d.Faulted()
	}) {
		t.Errorf("want e1's second fetch applied untouched, got %+v", res.Outcome.Deliveries)
	}
}

// A live run's deliveries excuse a record the consumer parked in its own
// dead letters as an in-memory run's do: after three fetches the driver
// failed (a scenario with no policy is judged under DefaultPolicy's four
// attempts), not after one.
func TestJudgeLiveLogExcusesOwnDeadLetters(t *testing.T) {
	lc := ownPositions(false)
	lc.Ordered = false
	c := logConsumer(lc)
	c.DeadLetters = "SELECT event_id FROM dead_letters"
	s := &Scenario{Version: 1, Workers: 1, Partitions: 1, Events: []Event{{ID: "e1", User: "u1", Amount: 100}}}
	quiet := Snapshot{DeadLetters: []string{"e1"}}
	fetches := func(n int) []Delivery {
		var out []Delivery
		for a := 1; a <= n; a++ {
			d := Delivery{Worker: "w1", Event: "e1", Attempt: a, Answer: AnswerNack, Error: ErrInjected.Error(), Settled: true,
				Faults: []Fault{{Kind: FaultInjected, At: "its first database call"}}}
			if a == n {
				d.Answer, d.Error = AnswerAck, "" // parked: the commit moves past it
			}
			out = append(out, d)
		}
		return out
	}
	if got := JudgeLiveLog(c, s, Snapshot{}, quiet, nil, fetches(3)); len(got) != 0 {
		t.Errorf("e1 parked after three injected failures was flagged: %v", got)
	}
	got := JudgeLiveLog(c, s, Snapshot{}, quiet, nil, fetches(1))
	if len(got) != 1 || got[0].Law != LawHealthyApplied {
		t.Errorf("want healthy-applied for e1 parked after one injected failure, got %v", got)
	}
	if got := JudgeLiveLog(c, s, Snapshot{}, quiet, nil, nil); len(got) != 1 || got[0].Law != LawHealthyApplied {
		t.Errorf("want healthy-applied for e1 parked with no fault recorded, got %v", got)
	}
}
