package consumerharness

import (
	"context"
	"database/sql"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/google/go-cmp/cmp"

	"github.com/idemcheck/idemcheck/impl/contract/broker"
	"github.com/idemcheck/idemcheck/impl/contract/handler"
	"github.com/idemcheck/idemcheck/internal/consumerharness/backend"
	runhistory "github.com/idemcheck/idemcheck/internal/history"
	"github.com/idemcheck/idemcheck/internal/hunt"
	"github.com/idemcheck/idemcheck/internal/law"
	"github.com/idemcheck/idemcheck/internal/situation"
)

// The laws a run is judged by: IDs of the law registry (package
// internal/law), which holds what each demands (LawDoc).
const (
	// LawSingleCredit: no event's effect is applied twice (per consumer
	// group and event id).
	LawSingleCredit = law.SingleCredit
	// LawNothingLost: once the system is quiet, every healthy event has
	// its effect or sits in the dead-letter queue.
	LawNothingLost = law.NothingLost
	// LawHealthyApplied: a healthy event ends applied exactly once, judged
	// once quiet (before the replay); it may sit un-applied in the
	// dead-letter queue only when the harness's own faults (injected
	// failures, crashes, ack timeouts of a stalled worker, lock timeouts
	// the scheduler forced in a deadlock between workers) spent the
	// attempts: a nack or a poison answer in a delivery without such a
	// fault is the consumer giving up on the event by itself (see
	// Delivery). A poison event (amount <= 0) is dead-lettered and never
	// applied, before the replay or after it.
	LawHealthyApplied = law.HealthyApplied
	// LawReplay: replaying the whole stream leaves the effects of the
	// events already applied unchanged.
	LawReplay = law.ReplayUnchanged
	// LawBoundedAttempts: no message is delivered more than max_attempts
	// times, and every dead-letter entry carries its attempts, last error
	// and key.
	LawBoundedAttempts = law.BoundedAttempts
	// LawAtomicity: the dedupe records and the effects agree (effect and
	// mark land together); judged when Consumer.Dedupe is set.
	LawAtomicity = law.Atomicity
	// LawRuns: the handler can be run at all (no panic, no transaction
	// left open, no stray goroutine, no hang, the system quiesces).
	LawRuns = law.Runs
	// LawCommitAfterApply: on a log broker, a committed offset never runs
	// ahead of the applied effects; judged for Log consumers with
	// per-event effects, at each commit.
	LawCommitAfterApply = law.CommitAfterApply
	// LawPartitionOrder: on a log broker, each partition's records are
	// applied in offset order; judged for Log consumers that claim it
	// (LogConsumer.Ordered).
	LawPartitionOrder = law.PartitionOrder
)

// Laws lists every law, in the order breaches are reported.
var Laws = []string{LawRuns, LawSingleCredit, LawNothingLost, LawHealthyApplied, LawAtomicity, LawReplay, LawBoundedAttempts, LawCommitAfterApply, LawPartitionOrder}

// LogOnly reports whether law is judged only on consumers of a log
// broker (Consumer.Log).
func LogOnly(law string) bool { return law == LawCommitAfterApply || law == LawPartitionOrder }

// Breach is one law broken in one run. Its Diff is of what should be
// (-want) against what was done (+got).
type Breach = hunt.Breach

func breach(law, summary string, details ...string) Breach {
	return Breach{Law: law, Summary: summary, Details: details}
}

// breaches collects the breaches of one snapshot's judgement, each with
// the snapshot's diff.
type breaches []Breach

// add adds a breach of law when details holds any.
func (out *breaches) add(law, summary, diff string, details []string) {
	if len(details) > 0 {
		b := breach(law, summary, details...)
		b.Diff = diff
		*out = append(*out, b)
	}
}

// Snapshot is what the effects and dedupe queries read at one moment.
type Snapshot struct {
	// Rows are the effects rows, each value rendered as text.
	Rows [][]string `json:"rows"`
	// Dedupe are the first column of the dedupe query's rows.
	Dedupe []string `json:"dedupe,omitempty"`
	// DeadLetters are the first column of the consumer's own dead-letter
	// query's rows (Consumer.DeadLetters).
	DeadLetters []string `json:"deadLetters,omitempty"`
	// missing are the queries that read a table that did not exist.
	missing []string
	// order is the first column of the effects' rows in the order the
	// query returned them (Rows are sorted): the apply order of an
	// Ordered log consumer (law partition-order).
	order []string
}

// missingRelation reports whether err says a query named a table that
// does not exist (SQLite's "no such table", PostgreSQL's 42P01).
func missingRelation(err error) bool {
	msg := err.Error()
	return strings.Contains(msg, "no such table") || strings.Contains(msg, "SQLSTATE 42P01") ||
		(strings.Contains(msg, "relation") && strings.Contains(msg, "does not exist"))
}

// checkMissing reports a query that read a table that does not exist once
// quiet, though the consumer acked a healthy event: its effect must be
// somewhere, and the query does not read it (a typo in its table's name).
func checkMissing(o *Outcome) error {
	if len(o.Quiet.missing) == 0 {
		return nil
	}
	for _, d := range o.Deliveries {
		if d.Answer != AnswerAck {
			continue
		}
		for _, e := range o.Scenario.Events {
			if e.ID == d.Event && !e.Poison {
				return fmt.Errorf("%w: the %s, once quiet, though the consumer acked %s", ErrBadInput, o.Quiet.missing[0], e.ID)
			}
		}
	}
	return nil
}

// Outcome is a played scenario: the trace, what the queries read before
// the first delivery, once quiet, and once quiet again after a replay of
// the stream, and the broker's final state.
type Outcome struct {
	Scenario *Scenario `json:"-"`
	Backend  string    `json:"backend"`
	Trace    *Trace    `json:"-"`
	Base     Snapshot  `json:"base"`
	Quiet    Snapshot  `json:"quiet"`
	Replayed Snapshot  `json:"replayed"`
	// DLQQuiet is the dead-letter queue once quiet, before the replay.
	DLQQuiet []broker.DLQEntry     `json:"dlqQuiet"`
	DLQ      []broker.DLQEntry     `json:"dlq"`
	Messages []broker.MessageState `json:"messages"`
	// Deliveries are every delivery of the run, in order: what the
	// consumer answered and what the harness did to it.
	Deliveries []Delivery `json:"deliveries"`
	// Failure is set when the run could not go on (law runs).
	Failure *Breach `json:"failure,omitempty"`
	// CommitGap, on a log broker, is the first commit that ran ahead of
	// the effects (law commit-after-apply).
	CommitGap *Breach `json:"commitGap,omitempty"`
	// Situations counts what the run reached, by name (see Situations).
	Situations map[string]int `json:"situations,omitempty"`
	// MachineClock names what in the run read the machine's clock
	// instead of the scenario's (see the package documentation, "Time"):
	// such a run's times, and with them its trace and verdict, may differ
	// from one play to the next.
	MachineClock []string `json:"machineClock,omitempty"`
	// runID labels the run's goroutines (see leaked).
	runID string
	// schemaPrint is the database schema's fingerprint (see schemaPrint),
	// saved with the case.
	schemaPrint string
	// fresh is the Worker that reuses nothing, from a Closer of the run's
	// workers that reused something (handler.FreshWorkers).
	fresh handler.Worker
}

// noteMachineClock records what read the machine's clock, once.
func (o *Outcome) noteMachineClock(what string) {
	if !slices.Contains(o.MachineClock, what) {
		o.MachineClock = append(o.MachineClock, what)
	}
}

// Situations are the named situations a campaign over a transactional
// consumer should reach (the registry's required consumer-level
// situations, kebab-case): a run that never crashes a worker at a commit,
// say, proves nothing about commits. A run also counts crash-at-rollback
// (a handler that rolls back at all, and a crash just there, are rarer),
// crash-at-handler-point (for handlers that call it) and
// lock-wait-given-up (a deadlock, or a lock a handler left held), which a
// correct consumer may never meet.
var Situations = situation.Required(situation.KindConsumer)

// LogSituations are the named situations a campaign over a consumer of a
// log broker (Consumer.Log) should reach: the consumer-level ones a log
// reaches too (crashes at the database's calls, injected failures, lock
// waits) and the log's rebalances and resets. A run also counts the
// log's optional ones: a commit fenced, a zombie's Handle failed (its
// transaction rolled back), a crash at a commit, an automatic commit.
var LogSituations = situation.RequiredLog()

// SituationsFor are the situations a campaign should reach: a log
// consumer's (log) or a queue consumer's.
func SituationsFor(log bool) []string {
	if log {
		return LogSituations
	}
	return Situations
}

// snapshot reads the effects and dedupe queries.
func snapshot(ctx context.Context, be backend.Database, c Consumer) (Snapshot, error) {
	return snapshotOf(ctx, be.Admin(), rewriter(be), c)
}

// snapshotOf reads the effects and dedupe queries through db, each
// query rewritten by rw first.
func snapshotOf(ctx context.Context, db *sql.DB, rw func(string) (string, []string), c Consumer) (Snapshot, error) {
	var s Snapshot
	read := func(what, query string) ([][]string, error) {
		q, _ := rw(query)
		rows, err := readRows(ctx, db, q)
		if err != nil && missingRelation(err) {
			// A table the consumer creates itself (a Worker factory, a
			// library on first use) reads empty until it is made; see
			// checkMissing for a query that names no table ever made.
			s.missing = append(s.missing, what+" query "+strconv.Quote(query)+": "+err.Error())
			return nil, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%w: the %s query %q failed: %w", ErrBadInput, what, query, err)
		}
		return rows, nil
	}
	rows, err := read("effects", c.Effects.Query)
	if err != nil {
		return s, err
	}
	if c.Effects.Aggregate {
		for _, row := range rows {
			if len(row) < 2 {
				return s, fmt.Errorf("%w: the aggregate effects query %q must return (user id, total cents), got %d column(s)", ErrBadInput, c.Effects.Query, len(row))
			}
			if _, err := parseCents(row[1]); err != nil {
				return s, fmt.Errorf("%w: the aggregate effects query %q returned a total that is not a number: %q", ErrBadInput, c.Effects.Query, row[1])
			}
		}
	}
	s.Rows = rows
	for _, row := range rows {
		if len(row) > 0 {
			s.order = append(s.order, row[0])
		}
	}
	if c.Dedupe != "" {
		d, err := read("dedupe", c.Dedupe)
		if err != nil {
			return s, err
		}
		for _, row := range d {
			s.Dedupe = append(s.Dedupe, row[0])
		}
		slices.Sort(s.Dedupe)
	}
	if c.DeadLetters != "" {
		d, err := read("dead-letter", c.DeadLetters)
		if err != nil {
			return s, err
		}
		for _, row := range d {
			s.DeadLetters = append(s.DeadLetters, row[0])
		}
		slices.Sort(s.DeadLetters)
	}
	slices.SortFunc(s.Rows, func(a, b []string) int { return slices.Compare(a, b) })
	return s, nil
}

func parseCents(s string) (int64, error) {
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return n, nil
	}
	f, err := strconv.ParseFloat(s, 64)
	return int64(f), err
}

func readRows(ctx context.Context, db querier, query string) ([][]string, error) {
	rows, err := db.QueryContext(ctx, query)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return nil, err
	}
	if len(cols) == 0 {
		return nil, fmt.Errorf("no columns")
	}
	var out [][]string
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return nil, err
		}
		row := make([]string, len(cols))
		for i, v := range vals {
			switch v := v.(type) {
			case nil:
				row[i] = "NULL"
			case []byte:
				row[i] = string(v)
			default:
				row[i] = fmt.Sprint(v)
			}
		}
		out = append(out, row)
	}
	return out, rows.Err()
}

// play runs s against c on be and returns the outcome. An error is bad
// input (the schema or a query failed) or the harness failing; a broken
// law is in the outcome.
func play(ctx context.Context, be backend.Backend, c Consumer, s *Scenario, g *guard, bubble bool) (*Outcome, error) {
	c.named(s)
	if err := s.Validate(); err != nil {
		return nil, err
	}
	switch {
	case c.Log != nil && s.Partitions == 0:
		return nil, fmt.Errorf("%w: consumer %q reads a log broker, and the scenario has no partitions (a queue broker's scenario)", ErrBadInput, c.displayName())
	case c.Log == nil && s.Partitions > 0:
		return nil, fmt.Errorf("%w: the scenario has partitions (a log broker's), and consumer %q is no Log consumer", ErrBadInput, c.displayName())
	}
	g.enter(phaseStarting)
	r, err := newRun(ctx, be, c, s, g, bubble)
	if err != nil {
		return nil, err
	}
	out := &Outcome{Scenario: s, Backend: be.Name(), Trace: r.trace, runID: r.id}
	defer r.close()
	if out.Base, err = baseSnapshot(ctx, r, c); err != nil {
		return nil, err
	}
	if err := r.startWorkers(); err != nil {
		return nil, err
	}
	if c.Log != nil {
		r.logInit()
		r.lg.base = out.Base
	}
	// Under Verify the search decides each step as the run goes
	// (verify_exec.go); otherwise the steps are the scenario's.
	r.v = verifierOf(ctx, r)
	r.produce()
	for i := 0; r.failure == nil; i++ {
		st, ok := r.nextStep(i)
		if !ok {
			break
		}
		r.step(st)
	}
	if r.failure == nil {
		r.tracef(Entry{Kind: KindPhase}, "-- drain: workers take turns until nothing is pending --")
		r.drain()
	}
	if r.failure == nil {
		if out.Quiet, err = snapshot(ctx, r.db, c); err != nil {
			return nil, err
		}
		if err := checkKeys(c, s, out.Base, out.Quiet); err != nil {
			return nil, err
		}
		out.Deliveries = r.deliveries
		if err := checkMissing(out); err != nil {
			return nil, err
		}
		out.DLQQuiet = r.b.DLQ()
		r.timedOutInDLQ()
		own := ""
		if c.DeadLetters != "" {
			own = fmt.Sprintf(" (and %d in the consumer's own dead letters)", len(out.Quiet.DeadLetters)-len(out.Base.DeadLetters))
		}
		if r.lg != nil {
			// A log's reprocessing is the replay step, drawn as any
			// fault: the run ends once quiet (see docs/consumers.md).
			r.tracef(Entry{Kind: KindPhase}, "-- quiet at t=%dms: %d effect row(s)%s; every partition read to its end --", r.now(), len(out.Quiet.Rows)-len(out.Base.Rows), own)
			out.Replayed = out.Quiet
		} else {
			r.tracef(Entry{Kind: KindPhase}, "-- quiet at t=%dms: %d effect row(s), %d dead-lettered%s; the whole stream is replayed --", r.now(), len(out.Quiet.Rows)-len(out.Base.Rows), len(out.DLQQuiet), own)
			r.replayed = true
			r.b.Replay(Topic)
			r.drain()
		}
	}
	if r.failure == nil && r.lg == nil {
		if out.Replayed, err = snapshot(ctx, r.db, c); err != nil {
			return nil, err
		}
		if err := checkKeys(c, s, out.Base, out.Replayed); err != nil {
			return nil, err
		}
		r.tracef(Entry{Kind: KindPhase}, "-- quiet again at t=%dms: %d effect row(s) --", r.now(), len(out.Replayed.Rows)-len(out.Base.Rows))
	}
	out.DLQ, out.Messages = r.b.DLQ(), r.b.Messages()
	r.timedOutInDLQ()
	out.Deliveries = r.deliveries
	for _, d := range out.DLQ {
		if !d.Poison {
			r.reach(situation.ConsumerDeadLetterSpent)
		}
	}
	r.close()
	out.Failure, out.Situations, out.fresh = r.failure, r.situations, r.fresh
	if r.lg != nil {
		out.CommitGap = r.lg.gap
	}
	for _, m := range r.machineClock {
		out.noteMachineClock(m)
	}
	return out, nil
}

// checkKeys reports queries whose rows are not keyed as they must be: the
// effects (per event), dedupe and dead-letter queries by an id of one of
// the scenario's events, aggregate effects by one of its users. A row the
// schema seeded is anybody's. A query that reads another column first
// would be judged as if nothing were applied: it is bad input, at once.
func checkKeys(c Consumer, s *Scenario, base, snap Snapshot) error {
	ids, users := map[string]bool{}, map[string]bool{}
	for _, e := range s.Events {
		ids[e.ID], users[e.User] = true, true
	}
	seeded := func(rows []string) map[string]int {
		out := map[string]int{}
		for _, k := range rows {
			out[k]++
		}
		return out
	}
	check := func(what, query string, keys, baseKeys []string, valid map[string]bool, kind string) error {
		left := seeded(baseKeys)
		for _, k := range keys {
			if left[k] > 0 {
				left[k]--
				continue
			}
			if !valid[k] {
				return fmt.Errorf("%w: the %s query %q must return %s first: it returned a row keyed %q, which is no %s of the scenario (%s: %s); check its first column (or the consumer writes keys no event has)",
					ErrBadInput, what, query, kind, k, strings.TrimSuffix(kind, " id"), kind+"s", strings.Join(slices.Sorted(maps.Keys(valid)), ", "))
			}
		}
		return nil
	}
	first := func(rows [][]string) []string {
		out := make([]string, len(rows))
		for i, r := range rows {
			out[i] = r[0]
		}
		return out
	}
	if c.Effects.Aggregate {
		if err := check("aggregate effects", c.Effects.Query, first(snap.Rows), first(base.Rows), users, "user id"); err != nil {
			return err
		}
	} else if err := check("effects", c.Effects.Query, first(snap.Rows), first(base.Rows), ids, "event id"); err != nil {
		return err
	}
	if err := check("dedupe", c.Dedupe, snap.Dedupe, base.Dedupe, ids, "event id"); err != nil {
		return err
	}
	return check("dead-letter", c.DeadLetters, snap.DeadLetters, base.DeadLetters, ids, "event id")
}

// Judge returns the breaches of o, in the order of Laws.
func Judge(c Consumer, o *Outcome) []Breach {
	if o.Failure != nil {
		return []Breach{*o.Failure}
	}
	j := judge{c: c, o: o, s: o.Scenario}
	if c.Log != nil {
		return j.judgeLog()
	}
	var out []Breach
	if c.Effects.Aggregate {
		out = append(out, j.aggregate("once quiet", o.Quiet, o.DLQQuiet, true)...)
		out = append(out, j.aggregate("after the replay", o.Replayed, o.DLQ, false)...)
	} else {
		out = append(out, j.perEvent("once quiet", o.Quiet, o.DLQQuiet, true)...)
		out = append(out, j.perEvent("after the replay", o.Replayed, o.DLQ, false)...)
	}
	if c.Dedupe != "" {
		out = append(out, j.atomicity("once quiet", o.Quiet)...)
		out = append(out, j.atomicity("after the replay", o.Replayed)...)
	}
	out = append(out, j.replay()...)
	out = append(out, j.attempts()...)
	if ids := shared(); len(ids) > 0 {
		out = append(out, runhistory.Judge(c.History(o), ids...)...)
	}
	slices.SortStableFunc(out, func(a, b Breach) int { return rank(a.Law) - rank(b.Law) })
	return out
}

type judge struct {
	c Consumer
	o *Outcome
	s *Scenario
}

// dead returns the ids of the events with a message in dlq, or in the
// consumer's own dead-letter records of snap.
func (j judge) dead(dlq []broker.DLQEntry, snap Snapshot) map[string]bool {
	out := map[string]bool{}
	for _, d := range dlq {
		out[d.Key] = true
	}
	for _, id := range snap.DeadLetters {
		out[id] = true
	}
	return out
}

// counts counts the rows of snap per event id, less the base rows.
func (j judge) counts(snap Snapshot) map[string]int {
	out := map[string]int{}
	for _, row := range snap.Rows {
		out[row[0]]++
	}
	for _, row := range j.o.Base.Rows {
		out[row[0]]--
	}
	return out
}

func (j judge) perEvent(when string, snap Snapshot, dlq []broker.DLQEntry, quiet bool) []Breach {
	got, deadIDs := j.counts(snap), j.dead(dlq, snap)
	excused := j.excused()
	want := map[string]int{}
	gotE := map[string]int{}
	var twice, lost, spent, poison []string
	for _, e := range j.s.Events {
		n := got[e.ID]
		gotE[e.ID] = n
		switch {
		case e.Poison:
			want[e.ID] = 0
		case deadIDs[e.ID] && (!quiet || excused[e.ID]):
			want[e.ID] = min(n, 1)
		default:
			want[e.ID] = 1
		}
		if n > 1 {
			twice = append(twice, fmt.Sprintf("%s applied %d times %s (rows %s)", e.ID, n, when, rowsOf(snap, e.ID)))
		}
		switch {
		case e.Poison:
			switch {
			case quiet && (n > 0 || !deadIDs[e.ID]):
				poison = append(poison, j.poisonDetail(e, n, deadIDs[e.ID], snap, when))
			case !quiet && n > 0 && j.counts(j.o.Quiet)[e.ID] == 0:
				poison = append(poison, j.poisonDetail(e, n, true, snap, when))
			}
		case !quiet || n > 0:
		case !deadIDs[e.ID]:
			lost = append(lost, fmt.Sprintf("%s has no effect %s and is not in the dead-letter queue", e.ID, when))
		case !excused[e.ID]:
			spent = append(spent, j.spentDetail(e, when))
		}
	}
	diff := cmp.Diff(want, gotE)
	var out breaches
	add := func(law, summary string, details []string) { out.add(law, summary, diff, details) }
	add(LawSingleCredit, fmt.Sprintf("an event's effect was applied more than once (%s)", when), twice)
	add(LawNothingLost, "an event was lost: no effect and not dead-lettered", lost)
	add(LawHealthyApplied, summaryDeadLettered, spent)
	add(LawHealthyApplied, fmt.Sprintf("a poison event was applied or not dead-lettered (%s)", when), poison)
	return out
}

func rowsOf(snap Snapshot, id string) string {
	var parts []string
	for _, row := range snap.Rows {
		if row[0] == id {
			parts = append(parts, "("+strings.Join(row, ", ")+")")
		}
	}
	return strings.Join(parts, " ")
}

// totals reads an aggregate snapshot as user -> cents.
func totals(snap Snapshot) map[string]int64 {
	out := map[string]int64{}
	for _, row := range snap.Rows {
		n, _ := parseCents(row[1])
		out[row[0]] += n
	}
	return out
}

// subsetSum reports whether d is the sum of some of amounts.
func subsetSum(amounts []int64, d int64) bool {
	if d == 0 {
		return true
	}
	if len(amounts) > 16 {
		amounts = amounts[:16]
	}
	for mask := 1; mask < 1<<len(amounts); mask++ {
		var s int64
		for i, a := range amounts {
			if mask&(1<<i) != 0 {
				s += a
			}
		}
		if s == d {
			return true
		}
	}
	return false
}

func (j judge) aggregate(when string, snap Snapshot, dlq []broker.DLQEntry, quiet bool) []Breach {
	base, got := totals(j.o.Base), totals(snap)
	deadIDs, excused := j.dead(dlq, snap), j.excused()
	// want holds the totals the events that must be applied make; each
	// user's other events are items the difference may be made of.
	want := maps.Clone(base)
	owedTotal := maps.Clone(base)
	items := map[string][]item{}
	var poisonKept []string
	for _, e := range j.s.Events {
		switch {
		case e.Poison:
			if quiet && !deadIDs[e.ID] {
				poisonKept = append(poisonKept, j.poisonDetail(e, 0, false, snap, when))
			}
			if e.Amount != 0 {
				items[e.User] = append(items[e.User], item{e: e, kind: forbidden})
			}
			continue
		case deadIDs[e.ID] && (!quiet || excused[e.ID]):
			items[e.User] = append(items[e.User], item{e: e, kind: optional})
		case deadIDs[e.ID]:
			items[e.User] = append(items[e.User], item{e: e, kind: owed})
		default:
			want[e.User] += e.Amount
		}
		if !deadIDs[e.ID] || (quiet && !excused[e.ID]) {
			owedTotal[e.User] += e.Amount
		}
	}
	users := slices.Sorted(maps.Keys(mergeKeys(want, got)))
	var twice, lost, wrong []string
	for _, u := range users {
		d := got[u] - want[u]
		var sum int64
		for _, it := range items[u] {
			if it.kind != forbidden {
				sum += it.e.Amount
			}
		}
		pick, penalty, ok := explain(items[u], d)
		switch {
		case ok && penalty == 0:
		case ok:
			wrong = append(wrong, j.wrongTotal(u, got[u], owedTotal[u], when, items[u], pick))
		case d < 0:
			if quiet {
				lost = append(lost, fmt.Sprintf("%s: total %d %s, want %d: %d cents of events that are not dead-lettered were never applied", u, got[u], when, want[u], -d))
			}
		default:
			twice = append(twice, fmt.Sprintf("%s: total %d %s, want %d: %d cents more than its events add up to once each", u, got[u], when, want[u]+sum, d-sum))
		}
	}
	gotAll := maps.Clone(got)
	for u := range owedTotal {
		gotAll[u] += 0
	}
	diff := cmp.Diff(owedTotal, gotAll)
	var out breaches
	add := func(law, summary string, details []string) { out.add(law, summary, diff, details) }
	add(LawSingleCredit, fmt.Sprintf("a total was credited more than once (%s)", when), twice)
	add(LawNothingLost, "an event was lost: its amount is missing and it is not dead-lettered", lost)
	add(LawHealthyApplied, fmt.Sprintf("a total is missing a healthy event's amount or holds a poison event's (%s)", when), wrong)
	add(LawHealthyApplied, summaryPoisonKept, poisonKept)
	return out
}

func mergeKeys(a, b map[string]int64) map[string]bool {
	out := map[string]bool{}
	for k := range a {
		out[k] = true
	}
	for k := range b {
		out[k] = true
	}
	return out
}

func (j judge) atomicity(when string, snap Snapshot) []Breach {
	baseMarks := map[string]int{}
	for _, id := range j.o.Base.Dedupe {
		baseMarks[id]++
	}
	marked := map[string]bool{}
	for _, id := range snap.Dedupe {
		if baseMarks[id] > 0 {
			baseMarks[id]--
			continue
		}
		marked[id] = true
	}
	if j.c.Effects.Aggregate {
		want := totals(j.o.Base)
		for _, e := range j.s.Events {
			if marked[e.ID] {
				want[e.User] += e.Amount
			}
		}
		got := totals(snap)
		for u := range want {
			got[u] += 0
		}
		if diff := cmp.Diff(want, got); diff != "" {
			b := breach(LawAtomicity, fmt.Sprintf("the totals do not match the events marked processed (%s)", when),
				fmt.Sprintf("marked processed %s: %s", when, strings.Join(slices.Sorted(maps.Keys(marked)), ", ")))
			b.Diff = diff
			return []Breach{b}
		}
		return nil
	}
	applied := map[string]bool{}
	for id, n := range j.counts(snap) {
		if n > 0 {
			applied[id] = true
		}
	}
	var details []string
	for _, e := range j.s.Events {
		switch {
		case applied[e.ID] && !marked[e.ID]:
			details = append(details, fmt.Sprintf("%s has its effect but no dedupe record %s", e.ID, when))
		case marked[e.ID] && !applied[e.ID]:
			details = append(details, fmt.Sprintf("%s is marked processed but has no effect %s", e.ID, when))
		}
	}
	if len(details) == 0 {
		return nil
	}
	b := breach(LawAtomicity, fmt.Sprintf("effects and dedupe records disagree (%s)", when), details...)
	b.Diff = cmp.Diff(marked, applied)
	return []Breach{b}
}

// replay compares the effects after the replay with those before it: the
// events applied before keep exactly their rows (per event) or the totals
// move only by events that were dead-lettered before (aggregate).
func (j judge) replay() []Breach {
	o := j.o
	if j.c.Effects.Aggregate {
		before, after := totals(o.Quiet), totals(o.Replayed)
		deadIDs := j.dead(o.DLQQuiet, o.Quiet)
		optional := map[string][]int64{}
		for _, e := range j.s.Events {
			if deadIDs[e.ID] {
				optional[e.User] = append(optional[e.User], e.Amount)
			}
		}
		var details []string
		for _, u := range slices.Sorted(maps.Keys(mergeKeys(before, after))) {
			if d := after[u] - before[u]; d != 0 && !(d > 0 && subsetSum(optional[u], d)) {
				details = append(details, fmt.Sprintf("%s: total %d before the replay, %d after", u, before[u], after[u]))
			}
		}
		if len(details) == 0 {
			return nil
		}
		b := breach(LawReplay, "replaying the stream changed the totals", details...)
		b.Diff = cmp.Diff(before, after)
		return []Breach{b}
	}
	had := j.counts(o.Quiet)
	var before, after [][]string
	var details []string
	for _, e := range j.s.Events {
		if had[e.ID] <= 0 {
			continue
		}
		rb, ra := rowsOf(o.Quiet, e.ID), rowsOf(o.Replayed, e.ID)
		if rb != ra {
			details = append(details, fmt.Sprintf("%s: %s before the replay, %s after", e.ID, rb, ra))
		}
		before = append(before, idRows(o.Quiet, e.ID)...)
		after = append(after, idRows(o.Replayed, e.ID)...)
	}
	if len(details) == 0 {
		return nil
	}
	b := breach(LawReplay, "replaying the stream changed the effects of events already applied", details...)
	b.Diff = cmp.Diff(before, after)
	return []Breach{b}
}

func idRows(snap Snapshot, id string) [][]string {
	var out [][]string
	for _, row := range snap.Rows {
		if row[0] == id {
			out = append(out, row)
		}
	}
	return out
}

func (j judge) attempts() []Breach {
	var details []string
	limit := j.s.Policy.MaxAttempts
	for _, m := range j.o.Messages {
		if m.Message.Attempts > limit {
			details = append(details, fmt.Sprintf("%s (offset %d) was delivered %d times, max_attempts is %d", m.Message.Key, m.Message.Offset, m.Message.Attempts, limit))
		}
	}
	for _, d := range j.o.DLQ {
		switch {
		case d.Attempts < 1 || d.Attempts > limit:
			details = append(details, fmt.Sprintf("dead-letter entry of %s (offset %d) carries %d attempts", d.Key, d.Offset, d.Attempts))
		case d.LastError == "" || d.Key == "" || d.Topic != Topic:
			details = append(details, fmt.Sprintf("dead-letter entry of offset %d lacks its metadata: %+v", d.Offset, d))
		case !d.Poison && d.Attempts != limit:
			details = append(details, fmt.Sprintf("%s (offset %d) was dead-lettered after %d attempts, not %d", d.Key, d.Offset, d.Attempts, limit))
		}
	}
	if len(details) == 0 {
		return nil
	}
	return []Breach{breach(LawBoundedAttempts, "a message broke the retry policy", details...)}
}
