package consumerharness

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/impl/contract/handler"
	"github.com/idemcheck/idemcheck/internal/situation"
)

// commitFirst commits each batch's offset before its transaction: a
// crash or a rebalance between the two loses or doubles nothing that
// the commit itself does not show (commit-after-apply).
func commitFirst() *handler.LogConsumer {
	lc := ownPositions(false)
	apply := lc.Handle
	lc.Handle = func(ctx context.Context, db *sql.DB, rs []handler.Record, log handler.Offsets) error {
		if err := log.Commit(ctx, rs[0].Partition, rs[len(rs)-1].Offset+1); err != nil {
			return err
		}
		return apply(ctx, db, rs, log)
	}
	return lc
}

// The correct log consumer is verified within the default log bounds,
// and the search met a rebalance, a fenced commit and a crash at a commit.
func TestVerifyLogConsumer(t *testing.T) {
	res, err := Explore(logConsumer(ownPositions(false)), DefaultBounds)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Verified {
		t.Fatalf("want VERIFIED, got:\n%s", res.Report())
	}
	for _, s := range []string{situation.LogRebalance, situation.LogCommitFenced} {
		if res.Coverage[s] == 0 {
			t.Errorf("the search never reached %s: %v", s, res.Coverage)
		}
	}
	t.Log(res.Report())
}

// A commit ahead of the effects is caught by Verify under the law Check
// finds.
func TestVerifyCatchesLogCommitFirst(t *testing.T) {
	res, err := Explore(logConsumer(commitFirst()), DefaultLogBounds)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Failed || res.Law != LawCommitAfterApply {
		t.Fatalf("want commit-after-apply, got:\n%s", res.Report())
	}
	t.Log(res.Report())
}

// Bounds a log does not have are refused, naming them.
func TestVerifyLogBadBounds(t *testing.T) {
	_, err := Explore(logConsumer(ownPositions(false)), Bounds{Events: []Fate{FateOK, FateSame}, Workers: 2, Duplicates: 1})
	if err == nil || !strings.Contains(err.Error(), "duplicates on a log broker") || !strings.Contains(err.Error(), "fate same on a log broker") {
		t.Errorf("the queue's default bounds on a log: %v", err)
	}
	if _, err := Explore(Consumer{Name: "q", Schema: logSchema, Handler: splitCheck, Effects: PerEvent("SELECT event_id FROM ledger")}, DefaultLogBounds); err == nil || !strings.Contains(err.Error(), "log broker's") {
		t.Errorf("log bounds on a queue consumer: %v", err)
	}
}

// logSoundnessWorlds are log worlds small enough for a brute force: a
// correct consumer and one committing first, with a rebalance, a crash at
// any point (a commit's among them), a failure, a reset and two
// partitions whose fetches commute.
func logSoundnessWorlds() []soundnessWorld {
	ok := FateOK
	own, first := logConsumer(ownPositions(false)), logConsumer(commitFirst())
	own.Name, first.Name = "log-own-positions", "log-commit-first"
	return []soundnessWorld{
		{own, Bounds{Events: []Fate{ok}, Workers: 2, Partitions: 1, Preemptions: 1, Crashes: 1, Rebalances: 1}, nil},
		{own, Bounds{Events: []Fate{ok, ok}, Workers: 2, Partitions: 2, Rebalances: 1}, nil},
		{first, Bounds{Events: []Fate{ok}, Workers: 2, Partitions: 1, Preemptions: 1, Failures: 1, Rebalances: 1}, nil},
		{first, Bounds{Events: []Fate{ok}, Workers: 1, Partitions: 1, Crashes: 1, Replays: 1}, nil},
	}
}

// TestLogReductionsLoseNoOutcome: on a log broker too, the reduced search
// (footprints of fetches, commits, settles and rebalances on the
// partitions' state; the state's name covering positions, ownership and
// committed offsets) meets the states and outcomes of the brute force.
func TestLogReductionsLoseNoOutcome(t *testing.T) {
	t.Parallel() // a long search: it runs beside the package's other long tests
	for _, w := range logSoundnessWorlds() {
		t.Run(w.c.Name, func(t *testing.T) {
			brute, bres := outcomesOf(t, w.c, w.b, NoPOR(), NoCache())
			reduced, rres := outcomesOf(t, w.c, w.b)
			if lost := diffSets(brute, reduced); len(lost) > 0 {
				t.Errorf("%s: the reduced search lost %d of %d states and outcomes:\n%s", w, len(lost), len(brute), strings.Join(lost, "\n"))
			}
			if extra := diffSets(reduced, brute); len(extra) > 0 {
				t.Errorf("%s: the reduced search met %d states or outcomes the brute force did not:\n%s", w, len(extra), strings.Join(extra, "\n"))
			}
			if rres.Schedules >= bres.Schedules {
				t.Errorf("%s: the reductions saved nothing (%d schedules, brute force %d)", w, rres.Schedules, bres.Schedules)
			}
			t.Logf("%s: %d states and outcomes; brute force %d schedules, reduced %d (%d sleep-pruned, %d cache-pruned)",
				w, len(brute), bres.Schedules, rres.Schedules, rres.SleepPruned, rres.CachePruned)
		})
	}
}

// A log campaign's coverage is its own: it reaches every situation
// required of a log consumer (rebalances, resets, crashes at the
// database's calls, injected failures, lock waits) and counts the log's
// optional ones; its summary lists no queue situation (a log has no
// nack, redelivery, duplicate or dead-letter queue).
func TestLogCampaignCoverage(t *testing.T) {
	t.Parallel() // a long search: it runs beside the package's other long tests
	res, err := Hunt(logConsumer(ownPositions(false)), Checks(2000), Seed(5))
	if err != nil || res.Failed {
		t.Fatalf("%v\n%s", err, res.Report())
	}
	for _, s := range LogSituations {
		if res.Coverage[s] == 0 {
			t.Errorf("never reached in 2000 log scenarios: %s", s)
		}
	}
	for _, s := range []string{situation.LogCommitFenced, situation.LogZombieRolledBack, situation.LogCrashAtCommit} {
		if res.Coverage[s] == 0 {
			t.Errorf("the campaign over a consumer that commits and fences its writes never reached %s", s)
		}
	}
	sum := res.PassSummary()
	for _, q := range []string{situation.ConsumerNack, situation.RedeliveryAfterNack, situation.ConsumerDuplicate, situation.ConsumerDeadLetterPoison} {
		if slices.Contains(LogSituations, q) || strings.Contains(sum, q) {
			t.Errorf("a log run lists the queue's %s: %s", q, sum)
		}
	}
	if !strings.Contains(sum, fmt.Sprintf("of %d coverage situations", len(LogSituations))) {
		t.Errorf("the summary does not count the log's situations: %s", sum)
	}
	t.Log(sum)

	auto := ownPositions(false)
	auto.AutoCommit = time.Second
	// Its automatic commits run ahead of a failed batch (as
	// logautocommit's do): the coverage is read whatever the verdict.
	res, err = Hunt(logConsumer(auto), Checks(300), Seed(5))
	if err != nil {
		t.Fatal(err)
	}
	if res.Coverage[situation.LogAutoCommit] == 0 {
		t.Errorf("a campaign over an auto-committing consumer never reached %s: %v", situation.LogAutoCommit, res.Coverage)
	}
}

// On a log too, the same bounds give the same search and the same
// counterexample, on one walker or three.
func TestTheSameLogBoundsGiveTheSameResult(t *testing.T) {
	b := Bounds{Events: []Fate{FateOK}, Workers: 2, Partitions: 1, Preemptions: 1, Crashes: 1, Rebalances: 1}
	c := logConsumer(commitFirst())
	first, err := Explore(c, b)
	if err != nil {
		t.Fatal(err)
	}
	again, err := Explore(c, b)
	if err != nil {
		t.Fatal(err)
	}
	if withoutTimes(first) != withoutTimes(again) {
		t.Errorf("two searches of the same bounds differ:\n%s\n%s", withoutTimes(first), withoutTimes(again))
	}
	par, err := Explore(c, b, VerifyParallel(3))
	if err != nil {
		t.Fatal(err)
	}
	if !first.Failed || par.Law != first.Law || first.Outcome.Trace.String() != par.Outcome.Trace.String() {
		t.Errorf("3 walkers gave another counterexample:\n%s\n%s", first.Report(), par.Report())
	}
}

// A log world's bounds say what a log world has (records, rebalances of
// its partitions, resets of the group's offsets, the policy's max_attempts
// and backoff) and none of the queue's duplicates, replays or ack
// timeout; a queue's bounds are unchanged.
func TestLogBoundsString(t *testing.T) {
	lc := ownPositions(false)
	lc.AutoCommit = time.Second
	b := DefaultLogBounds
	b.Then = []Bounds{logWorld(b.Then[0], lc)}
	got := b.String()
	want := "2 record(s) x 2 worker(s), <= 1 preemption(s), <= 1 crash(es), <= 1 injected failure(s), <= 1 rebalance(s) of 1 partition(s), <= 0 reset(s) of the group's offsets, <= 0 time advance(s); max_attempts 2, backoff 100ms; " +
		"then (2) 1 record(s) x 1 worker(s), <= 0 preemption(s), <= 1 crash(es), <= 1 injected failure(s), <= 0 rebalance(s) of 1 partition(s), <= 1 reset(s) of the group's offsets, <= 1 time advance(s) (to the next retry or by 1s); max_attempts 2, backoff 100ms"
	if got != want {
		t.Errorf("the default log bounds read\n%s\nwant\n%s", got, want)
	}
	for _, queueOnly := range []string{"duplicate", "replay", "ack timeout", "event(s)", "deadline"} {
		if strings.Contains(got, queueOnly) {
			t.Errorf("the log bounds speak of the queue's %q: %s", queueOnly, got)
		}
	}
	// A fate other than ok (refused on a log) is named, not hidden.
	odd := Bounds{Events: []Fate{FateOK, FatePoison}, Workers: 1, Partitions: 2}
	if s := odd.String(); !strings.HasPrefix(s, "2 record(s) (ok, poison) x 1 worker(s)") {
		t.Errorf("bounds with a poison record read %s", s)
	}
	q := DefaultBounds.Then[1].String()
	if !strings.Contains(q, "<= 1 duplicate(s)") || !strings.Contains(q, "(to the broker's next deadline or by 1m0s, 1h0m0s, 24h0m0s, 720h0m0s) (and the consumer's own windows)") ||
		!strings.Contains(q, "<= 0 replay(s); max_attempts 2, ack timeout 1000ms") || strings.Contains(q, "partition") {
		t.Errorf("the queue's bounds read %s", q)
	}
}
