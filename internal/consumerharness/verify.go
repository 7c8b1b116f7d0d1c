package consumerharness

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/internal/consumerharness/backend"
	"github.com/idemcheck/idemcheck/internal/search"
)

// Fate is what becomes of an event's deliveries in a verification: "ok"
// (the handler runs as written), "same" (ok, and its payload is the one
// of the event before under an id of its own: a payload collision),
// "poison" (the event carries an amount of zero, which a handler should
// dead-letter) or "transient:N" (the first N deliveries of the event fail
// at their first begin, exec or query, as a lost connection does: the
// handler should nack them).
type Fate string

// The fates without a count.
const (
	FateOK     Fate = "ok"
	FateSame   Fate = "same"
	FatePoison Fate = "poison"
)

// Transient is the fate of an event whose first n deliveries fail at their
// first begin, exec or query (a delivery that makes none before it returns
// is not failed, and does not count).
func Transient(n int) Fate { return Fate(fmt.Sprintf("transient:%d", n)) }

// failures reads the fate: poison, and how many deliveries fail.
func (f Fate) failures() (poison bool, n int, err error) {
	switch s := string(f); {
	case s == string(FateOK), s == string(FateSame):
		return false, 0, nil
	case s == string(FatePoison):
		return true, 0, nil
	case s == "transient":
		return false, 1, nil
	case strings.HasPrefix(s, "transient:"):
		n, err := strconv.Atoi(strings.TrimPrefix(s, "transient:"))
		if err != nil || n < 1 {
			return false, 0, fmt.Errorf("event fate %q: transient:N needs a whole N >= 1", s)
		}
		return false, n, nil
	}
	return false, 0, fmt.Errorf("event fate %q is not ok, same, poison or transient:N", f)
}

// ParseFates reads a list of fates as the command line gives it: a count
// of ok events ("2"), or fates separated by commas
// ("ok,same,transient:2,poison").
func ParseFates(s string) ([]Fate, error) {
	if n, err := strconv.Atoi(strings.TrimSpace(s)); err == nil {
		if n < 1 || n > maxVerifyEvents {
			return nil, fmt.Errorf("%d events: give 1 to %d", n, maxVerifyEvents)
		}
		return slices.Repeat([]Fate{FateOK}, n), nil
	}
	var out []Fate
	for _, part := range strings.Split(s, ",") {
		f := Fate(strings.TrimSpace(part))
		if _, _, err := f.failures(); err != nil {
			return nil, err
		}
		out = append(out, f)
	}
	return out, nil
}

// maxVerifyEvents bounds Bounds.Events: each event multiplies the schedules.
const maxVerifyEvents = 8

// Bounds bound a verification: the world (the events, the workers, the
// broker's policy) and how many of each choice a schedule may make. Within
// them Verify and Explore try every choice the scheduler makes: which
// worker moves at each point and which eligible message an idle worker
// receives, where a crash or an injected failure lands, when the broker
// duplicates a message or replays the stream, and when time moves.
type Bounds struct {
	// Events are the fates of the events produced at the start, one per
	// event (e1, e2, ...; all for user u1, the i-th for 100*i cents).
	Events []Fate `json:"events"`
	// Workers is the number of workers in the consumer group (1 to 8).
	Workers int `json:"workers"`
	// Preemptions bounds how often a schedule switches away from a worker
	// in the middle of a delivery while it could still move. Searched by
	// iterative deepening: every schedule with 0 preemptions, then with at
	// most 1, and so on, so that a counterexample found has the fewest.
	Preemptions int `json:"preemptions"`
	// Crashes bounds the crashes (of a worker anywhere it is parked, or,
	// for a Worker consumer, idle).
	Crashes int `json:"crashes"`
	// Failures bounds the injected transient failures (a begin, exec or
	// query that returns an error as a lost connection does), besides
	// those of the transient fates.
	Failures int `json:"failures"`
	// Duplicates bounds the broker's duplicates of a message, at any point.
	Duplicates int `json:"duplicates"`
	// Advances bounds the moves of time made while a worker could still
	// move: to the broker's next deadline (an ack timeout, the end of a
	// backoff) or by one of Durations. When nothing else can move, time
	// moves to the broker's next deadline without counting.
	Advances int `json:"advances"`
	// Durations are further amounts time may move by (a lease or a TTL
	// the consumer keeps), besides the broker's next deadline.
	Durations []time.Duration `json:"durations,omitempty"`
	// ConsumerDurations adds to Durations the windows the consumer itself
	// uses, each moved past by a second: the interval literals of its SQL
	// ('-10 seconds', interval '30 days') and how far from the scenario's
	// time the times and timestamps it passes as arguments lie (a lease's
	// end, a TTL's cut-off), found by playing a few drawn scenarios
	// before the search (at most four, the shortest).
	ConsumerDurations bool `json:"consumerDurations,omitempty"`
	// Replays bounds the replays of the whole stream at any point (the
	// harness replays it once more after every schedule anyway); on a log
	// broker, the resets of the group's committed offsets to the start.
	Replays int `json:"replays"`
	// Rebalances bounds, on a log broker, the rebalances of the consumer
	// group: a partition given to another worker at any point (its
	// former owner, if it holds a batch, runs on as a zombie whose
	// commits are fenced).
	Rebalances int `json:"rebalances,omitempty"`
	// Partitions is, on a log broker, the number of partitions of the
	// topic (zero: 1); the i-th event goes to partition i mod Partitions.
	Partitions int `json:"partitions,omitempty"`
	// Policy is the broker's retry policy (zero: VerifyPolicy).
	Policy Policy `json:"policy"`
	// MaxSteps cuts a schedule this long (zero: 200): a consumer that has
	// not gone quiet by then is finished by the harness's fixed drain,
	// and the result counts the cut schedules.
	MaxSteps int `json:"maxSteps,omitempty"`
	// Log are the bounds used instead when the consumer reads a log
	// broker (Consumer.Log): a log has no duplicates, poison or payload
	// collisions, and has rebalances. DefaultBounds carry
	// DefaultLogBounds here, so that one set of bounds serves both.
	Log *Bounds `json:"log,omitempty"`
	// Then are further searches, each within bounds of its own, made
	// after this one: small worlds for what would make this one too
	// large (a poison event, time moving over a ladder of windows). The
	// verdict is VERIFIED only when every one is; the first
	// counterexample found ends the verification.
	Then []Bounds `json:"then,omitempty"`
}

// Ladder are the amounts of time the default bounds move time by, besides
// the broker's deadlines and the consumer's own windows: a minute, an
// hour, a day and thirty days.
var Ladder = []time.Duration{time.Minute, time.Hour, 24 * time.Hour, 30 * 24 * time.Hour}

// DefaultBounds cover every kind of fault at least once, in three worlds
// searched in turn:
//
//   - two events with equal payloads (ok, same) and two workers, with at
//     most one preemption, one crash, one injected failure and one
//     duplicate (SQLite's default deferred transactions interleave far
//     more than transactions that lock at BEGIN: two preemptions take
//     about five times as long; ask for them with Preemptions);
//   - an ok event and a poison one, two workers, at most one preemption,
//     one crash, one injected failure and one duplicate;
//   - one event, two workers, at most one preemption, one crash and one
//     duplicate, and time moving once, at any point, to the broker's next
//     deadline or by a ladder of windows: the consumer's own (see
//     ConsumerDurations) and a minute, an hour, a day and thirty days.
var DefaultBounds = Bounds{Events: []Fate{FateOK, FateSame}, Workers: 2, Preemptions: 1, Crashes: 1, Failures: 1, Duplicates: 1,
	Log: &DefaultLogBounds,
	Then: []Bounds{
		{Events: []Fate{FateOK, FatePoison}, Workers: 2, Preemptions: 1, Crashes: 1, Failures: 1, Duplicates: 1},
		{Events: []Fate{FateOK}, Workers: 2, Preemptions: 1, Crashes: 1, Duplicates: 1, Advances: 1, Durations: Ladder, ConsumerDurations: true},
	}}

// VerifyPolicy is a verification's retry policy unless Bounds.Policy
// says otherwise: two attempts, so that a message reaches the dead-letter
// queue within small bounds, and an ack timeout of one second.
var VerifyPolicy = Policy{MaxAttempts: 2, BackoffMs: 100, MaxBackoffMs: 400, AckTimeoutMs: 1000}

// defaultMaxSteps is Bounds.MaxSteps unless given.
const defaultMaxSteps = 200

func (b Bounds) withDefaults() Bounds {
	if b.Policy == (Policy{}) {
		b.Policy = VerifyPolicy
	}
	if b.MaxSteps == 0 {
		b.MaxSteps = defaultMaxSteps
	}
	return b
}

// Validate reports what makes the bounds unusable, naming it.
func (b Bounds) Validate() error {
	var errs []string
	if len(b.Events) == 0 || len(b.Events) > maxVerifyEvents {
		errs = append(errs, fmt.Sprintf("%d events (give 1 to %d fates)", len(b.Events), maxVerifyEvents))
	}
	for i, f := range b.Events {
		if _, _, err := f.failures(); err != nil {
			errs = append(errs, err.Error())
		}
		if f == FateSame && (i == 0 || b.Events[i-1] == FateSame) {
			errs = append(errs, fmt.Sprintf("event %d: the fate same repeats the payload of the event before, which must be there and not repeat one itself", i+1))
		}
	}
	if b.Log != nil {
		if b.Log.Log != nil {
			errs = append(errs, "log: the bounds of a log have no Log of their own")
		} else if err := b.Log.Validate(); err != nil {
			errs = append(errs, "log: "+strings.TrimPrefix(err.Error(), ErrBadInput.Error()+": bounds: "))
		}
	}
	for i, t := range b.Then {
		if t.Log != nil {
			errs = append(errs, fmt.Sprintf("then %d: a search of Then has no Log of its own", i+1))
		}
		if len(t.Then) > 0 {
			errs = append(errs, fmt.Sprintf("then %d: a search of Then has no Then of its own", i+1))
			continue
		}
		if err := t.Validate(); err != nil {
			errs = append(errs, fmt.Sprintf("then %d: %s", i+1, strings.TrimPrefix(err.Error(), ErrBadInput.Error()+": bounds: ")))
		}
	}
	if b.Workers < 1 || b.Workers > 8 {
		errs = append(errs, fmt.Sprintf("workers %d (1 to 8)", b.Workers))
	}
	for name, n := range map[string]int{"preemptions": b.Preemptions, "crashes": b.Crashes, "failures": b.Failures,
		"duplicates": b.Duplicates, "advances": b.Advances, "replays": b.Replays, "rebalances": b.Rebalances} {
		if n < 0 || n > 100 {
			errs = append(errs, fmt.Sprintf("%s %d (0 to 100)", name, n))
		}
	}
	for _, d := range b.Durations {
		if d < time.Millisecond {
			errs = append(errs, fmt.Sprintf("duration %s (at least 1ms)", d))
		}
	}
	if b.Partitions < 0 || b.Partitions > maxPartitions {
		errs = append(errs, fmt.Sprintf("partitions %d (0 to %d)", b.Partitions, maxPartitions))
	}
	if b.MaxSteps < 0 {
		errs = append(errs, fmt.Sprintf("max steps %d", b.MaxSteps))
	}
	p := b.withDefaults().Policy
	if p.MaxAttempts < 1 || p.BackoffMs < 0 || p.MaxBackoffMs < p.BackoffMs || p.AckTimeoutMs < 1 {
		errs = append(errs, fmt.Sprintf("policy %+v", p))
	}
	slices.Sort(errs)
	if len(errs) > 0 {
		return fmt.Errorf("%w: bounds: %s", ErrBadInput, strings.Join(errs, "; "))
	}
	return nil
}

// String says what the bounds allow, for a person: a log broker's
// (Partitions set) in its own words, its records, rebalances and resets
// of the group's offsets, and none of the queue's duplicates, which a log
// has none of.
func (b Bounds) String() string {
	b = b.withDefaults()
	if b.Partitions > 0 {
		return b.logString()
	}
	fates := make([]string, len(b.Events))
	for i, f := range b.Events {
		fates[i] = string(f)
	}
	s := fmt.Sprintf("%d event(s) (%s) x %d worker(s), <= %d preemption(s), <= %d crash(es), <= %d injected failure(s), <= %d duplicate(s), <= %d time advance(s)",
		len(b.Events), strings.Join(fates, ", "), b.Workers, b.Preemptions, b.Crashes, b.Failures, b.Duplicates, b.Advances)
	s += b.durationsNote("the broker's next deadline")
	s += fmt.Sprintf(", <= %d replay(s); max_attempts %d, ack timeout %dms", b.Replays, b.Policy.MaxAttempts, b.Policy.AckTimeoutMs)
	for i, t := range b.Then {
		s += fmt.Sprintf("; then (%d) %s", i+2, t)
	}
	return s
}

// logString is String for a log broker's bounds. The policy's
// max_attempts is named because healthy-applied excuses a record the
// consumer parks in its own dead letters only after the harness's faults
// failed max_attempts - 1 of its fetches; its backoff is when a failed
// batch is fetched again. The records' fates are named only when one is
// not ok (which Verify refuses on a log).
func (b Bounds) logString() string {
	fates := ""
	if slices.ContainsFunc(b.Events, func(f Fate) bool { return f != FateOK }) {
		names := make([]string, len(b.Events))
		for i, f := range b.Events {
			names[i] = string(f)
		}
		fates = " (" + strings.Join(names, ", ") + ")"
	}
	s := fmt.Sprintf("%d record(s)%s x %d worker(s), <= %d preemption(s), <= %d crash(es), <= %d injected failure(s), <= %d rebalance(s) of %d partition(s), <= %d reset(s) of the group's offsets, <= %d time advance(s)",
		len(b.Events), fates, b.Workers, b.Preemptions, b.Crashes, b.Failures, b.Rebalances, b.Partitions, b.Replays, b.Advances)
	s += b.durationsNote("the next retry")
	s += fmt.Sprintf("; max_attempts %d, backoff %dms", b.Policy.MaxAttempts, b.Policy.BackoffMs)
	for i, t := range b.Then {
		s += fmt.Sprintf("; then (%d) %s", i+2, t)
	}
	return s
}

// durationsNote says where time moves to besides next (the deadline it
// moves to when nothing else can move): by Durations, and by the
// consumer's own windows.
func (b Bounds) durationsNote(next string) string {
	s := ""
	if len(b.Durations) > 0 {
		ds := make([]string, len(b.Durations))
		for i, d := range b.Durations {
			ds[i] = d.String()
		}
		s += " (to " + next + " or by " + strings.Join(ds, ", ") + ")"
	}
	if b.ConsumerDurations {
		s += " (and the consumer's own windows)"
	}
	return s
}

// world is the String of b without its Then.
func (b Bounds) world() string {
	b.Then = nil
	return b.String()
}

// Unsearched names the kinds of fault none of the searches of b makes: a
// verification within b proves nothing about them.
func (b Bounds) Unsearched() []string {
	all := append([]Bounds{b}, b.Then...)
	has := func(f func(Bounds) bool) bool { return slices.ContainsFunc(all, f) }
	queueOnly := map[string]bool{"a poison event": true, "a payload collision": true, "a duplicate": true}
	var out []string
	for _, k := range []struct {
		what string
		in   func(Bounds) bool
	}{
		{"a second worker", func(b Bounds) bool { return b.Workers > 1 }},
		{"a preemption", func(b Bounds) bool { return b.Workers > 1 && b.Preemptions > 0 }},
		{"a poison event", func(b Bounds) bool { return slices.Contains(b.Events, FatePoison) }},
		{"a payload collision", func(b Bounds) bool { return slices.Contains(b.Events, FateSame) }},
		{"a crash", func(b Bounds) bool { return b.Crashes > 0 }},
		{"an injected failure", func(b Bounds) bool {
			return b.Failures > 0 || slices.ContainsFunc(b.Events, func(f Fate) bool { return strings.HasPrefix(string(f), "transient") })
		}},
		{"a duplicate", func(b Bounds) bool { return b.Duplicates > 0 }},
		{"time moving", func(b Bounds) bool { return b.Advances > 0 }},
		{"time moving past the consumer's own windows", func(b Bounds) bool { return b.Advances > 0 && (b.ConsumerDurations || len(b.Durations) > 0) }},
		{"a rebalance", func(b Bounds) bool { return b.Partitions == 0 || b.Rebalances > 0 }},
	} {
		if b.Partitions > 0 && queueOnly[k.what] {
			continue // a log has none
		}
		if !has(k.in) {
			out = append(out, k.what)
		}
	}
	return out
}

// scenario is the world of the bounds as a scenario with no steps yet.
func (b Bounds) scenario() *Scenario {
	b = b.withDefaults()
	s := &Scenario{Version: ScenarioVersion, Workers: b.Workers, Policy: b.Policy, Partitions: b.Partitions}
	for i, f := range b.Events {
		poison, _, _ := f.failures()
		e := Event{ID: fmt.Sprintf("e%d", i+1), User: "u1", Amount: int64(100 * (i + 1))}
		if b.Partitions > 1 {
			e.User = userOf(i%b.Partitions, b.Partitions)
		}
		if poison {
			e.Amount, e.Poison = 0, true
		}
		if f == FateSame && i > 0 {
			o := s.Events[i-1]
			e.User, e.Amount, e.Poison, e.Payload = o.User, o.Amount, o.Poison, o.ID
		}
		s.Events = append(s.Events, e)
	}
	return s
}

// verifyConfig are the options of Verify and Explore.
type verifyConfig struct {
	noPOR, noCache bool
	// noSymmetry names states with their workers in place: workers of a
	// Handler are no longer folded together.
	noSymmetry   bool
	timeBudget   time.Duration
	maxSchedules int64
	ctx          context.Context
	progress     func(VerifyProgress)
	// outcomes, when set, is told the outcome of every schedule judged
	// (or met again at its end): the soundness tests compare these sets.
	outcomes func(string)
	// parallel is the number of walkers searching at once.
	parallel int
	// noPreemptionBound searches every interleaving, as a brute force does.
	noPreemptionBound bool
	// exhaustive searches the bounds' preemptions at once, to the end,
	// whatever it finds: the soundness tests compare what it reaches.
	exhaustive bool
	// states, when set, is told the name of every state a run meets
	// (without the worker the schedule is on): the soundness tests
	// compare these sets too.
	states func(search.Key)
	// mutant breaks a reduction on purpose, so that a test shows the
	// soundness tests catch it (see reductionMutants).
	mutant string
	// shard, with shards, searches the shard-th of shards only (see
	// VerifyShard).
	shard, shards int
}

// verifyConfigOf is the configuration of a verification: on SQLite, one
// database restored between schedules and pooled connections that keep
// their prepared statements (backend.SQLiteReuse), which a search of many
// short schedules needs.
func verifyConfigOf(opts []Option) config {
	cfg := newConfig(opts)
	if b, ok := cfg.backend.(backend.SQLite); ok {
		cfg.backend = backend.SQLiteReuse(b)
	}
	return cfg
}

// VerifyParallel has n goroutines search at once (default 1), each on a
// database of its own: about n times faster on n cores. The verdict and
// the counterexample do not depend on n; the numbers of schedules and
// states searched vary a little from one run to the next when n > 1.
func VerifyParallel(n int) Option { return func(c *config) { c.verify.parallel = n } }

// NoPOR switches the partial-order reduction of Verify and Explore off:
// every order of two independent choices is tried, and on SQLite a crash
// is offered right after its worker's own call that a rollback takes back
// too.
func NoPOR() Option { return func(c *config) { c.verify.noPOR = true } }

// NoSymmetry switches the symmetry reduction of Verify and Explore off:
// states that differ only by which of a Handler's workers is where are
// explored each on its own, as they are for a Worker consumer (whose
// factory is given its worker's name, so its workers may differ).
func NoSymmetry() Option { return func(c *config) { c.verify.noSymmetry = true } }

// NoCache switches the state caching of Verify and Explore off: a state
// met again is explored again, and every idle worker of a Handler is
// offered the deliveries (with the cache, only the first is: the others
// reach the same states but for the workers' names). Caching is sound for a consumer whose
// handler is deterministic in what it is given and what it reads (see
// Explore); switch it off for one that is not.
func NoCache() Option { return func(c *config) { c.verify.noCache = true } }

// VerifyTime stops Verify or Explore after d: the result says which bound
// was fully explored by then.
func VerifyTime(d time.Duration) Option { return func(c *config) { c.verify.timeBudget = d } }

// VerifySchedules stops Verify or Explore after n schedules.
func VerifySchedules(n int64) Option { return func(c *config) { c.verify.maxSchedules = n } }

// VerifyContext stops Verify or Explore when ctx is done (Ctrl-C).
func VerifyContext(ctx context.Context) Option { return func(c *config) { c.verify.ctx = ctx } }

// OnVerifyProgress has f called every 2,000 schedules of Verify or
// Explore with how far the search is.
func OnVerifyProgress(f func(VerifyProgress)) Option {
	return func(c *config) { c.verify.progress = f }
}

// VerifyProgress is how far a running verification is.
type VerifyProgress struct {
	// Preemptions is the preemption bound being searched.
	Preemptions int
	Schedules   int64
	States      int64
	Elapsed     time.Duration
}

// Verify model-checks the consumer within the bounds from a test: it tries
// every schedule the bounds allow (see Explore) and fails t with the
// shortest counterexample it finds, saved under testdata/consumertest
// unless CorpusDir says otherwise; otherwise it logs "verified within
// these bounds" with what was searched. A search stopped by VerifyTime or
// VerifySchedules proves nothing for the bound it did not finish, and
// fails t saying which bound it did finish. With IDEMCHECK_REPLAY=FILE set
// (the replay command of a counterexample) it replays that file instead,
// as Check does.
func Verify(t *testing.T, c Consumer, b Bounds, opts ...Option) {
	t.Helper()
	cfg := verifyConfigOf(opts)
	cfg.t = t
	if cfg.corpusDir == "" {
		cfg.corpusDir = filepath.Join("testdata", "consumertest")
	}
	if os.Getenv(ReplayEnv) != "" {
		// The replay command of a saved counterexample: play that
		// scenario, as Check does, not the whole search again.
		Check(t, c, opts...)
		return
	}
	regress(t, c, opts)
	res, err := explore(c, b, cfg, t.Name())
	if err != nil {
		t.Fatal(err)
	}
	switch {
	case res.Failed:
		t.Fatalf("consumer %q breaks %s\n%s", c.displayName(), res.Law, res.Report())
	case !res.Verified:
		t.Fatalf("consumer %q not verified: %s\n%s", c.displayName(), res.Stopped, res.Report())
	}
	t.Log(res.Report())
}

// Explore model-checks the consumer within the bounds without failing any
// test: a counterexample is a result. An error means c or b could not be
// used at all.
//
// The search is stateless: every schedule is played from the start on a
// fresh database (SQLite's is the state the schema left, restored rather
// than created again), and a schedule is a Scenario, its steps decided as
// it runs. It ends when the system is quiet; the harness then replays the
// stream, drains, and judges the laws as for any scenario. So a
// counterexample is a Scenario like any other: Replay plays it, and the
// corpus keeps it.
//
// Preemptions are bounded by iterative deepening (every schedule with no
// preemption, then with at most one, ...), so the first counterexample has
// the fewest; among those, the search goes on for the one with the fewest
// steps, which is then cut to its shortest prefix that still breaks the
// law (the drain does the rest) and reduced as Hunt's are.
//
// Two reductions keep the search small, each sound for what it assumes.
//
// Partial-order reduction (sleep sets, off with NoPOR): two choices that
// touch nothing in common commute, so only one of their orders is tried.
// What a choice touches is read before it is made: a parked worker's next
// call is known with its SQL text and arguments, from which the tables it
// reads and writes are derived (and the rows, for a WHERE or a VALUES of
// equalities); a statement it cannot read touches everything, as do
// commits on SQLite (its one write lock), a blocked worker's retry,
// handler.Point, time and the replay. A choice never sleeps when the
// other order could need more preemptions than the bound allows. Crashes
// and duplicates are tried first at each point, so that they sleep in the
// subtrees of the choices they commute with; on SQLite a crash right after
// its worker's own call that a rollback takes back (a BEGIN, a read, a
// write inside a transaction) is not offered, the crash before the call
// leaving the same state.
//
// State caching (off with NoCache): a state met again with no more budget
// left and no fewer choices asleep is not explored again. A state is named
// by the database's content (every table, every row with its rowid, read
// after each statement that may have changed it), the broker's messages,
// dead-letter queue and clock, the time, the failures of the transient
// fates, the worker the schedule is on, and each worker's state: where it
// is parked, its delivery, and everything the database returned to it
// since its delivery began (for a Worker consumer: since its incarnation
// began, its memory being part of it). This is sound for a handler whose
// moves depend on nothing else: not on the machine's clock or randomness,
// nor on memory a Handler keeps between deliveries (give it as a Worker),
// nor on another process. On PostgreSQL a state is named only while no
// worker is inside a transaction. Workers of a Handler consumer are
// interchangeable: states that differ only by the workers' names are one,
// and only the first idle worker is offered the deliveries.
func Explore(c Consumer, b Bounds, opts ...Option) (VerifyResult, error) {
	return explore(c, b, verifyConfigOf(opts), "explore/"+c.displayName())
}

// VerifyResult is what a verification found.
type VerifyResult struct {
	// Result holds what every search reports: States, the distinct states
	// named (zero with NoCache); BytesPerState, the memory of the state
	// cache per state it named, measured on the caches of the searches
	// (see VerifyLevel.CacheBytes; zero with NoCache); Stopped, why the
	// search ended before the bounds were explored ("" when it did not:
	// interrupted, or a time or schedule budget); and Elapsed.
	search.Result
	Consumer string `json:"consumer"`
	Backend  string `json:"backend"`
	Bounds   Bounds `json:"bounds"`
	// Verified is true when every schedule within the bounds was explored
	// and none broke a law.
	Verified bool `json:"verified"`
	// Failed is true when a schedule broke a law: the counterexample.
	Failed bool `json:"failed"`
	// PreemptionsExplored is the largest preemption bound whose every
	// schedule was explored (-1: none).
	PreemptionsExplored int `json:"preemptionsExplored"`
	// Levels are the searches of each preemption bound, in order, world
	// after world (see Bounds.Then).
	Levels []VerifyLevel `json:"levels"`
	// World is the search the verdict is of: 0 for the bounds' own, i for
	// their Then[i-1] (where a counterexample was found, or the search
	// stopped; the last when every one was verified).
	World int `json:"world,omitempty"`
	// ConsumerDurations are the consumer's own windows the searches with
	// Bounds.ConsumerDurations moved time past (see there).
	ConsumerDurations []time.Duration `json:"consumerDurations,omitempty"`
	// Schedules counts the schedules played (each from the start, to its
	// end or to a state already explored); Judged those played to the end
	// and judged, or whose end state was judged before; Cut those cut at
	// Bounds.MaxSteps and finished by the drain.
	Schedules int64 `json:"schedules"`
	Judged    int64 `json:"judged"`
	Cut       int64 `json:"cut,omitempty"`
	// SleepPruned counts the choices the partial-order reduction did not
	// try, CachePruned the states not explored again, BoundPruned the
	// choices over the preemption bound.
	SleepPruned int64 `json:"sleepPruned"`
	CachePruned int64 `json:"cachePruned"`
	BoundPruned int64 `json:"boundPruned"`
	// Coverage counts, for each of Situations, the judged schedules that
	// reached it.
	Coverage map[string]int `json:"coverage"`

	// The counterexample, when Failed: its Law (search.Counterexample),
	// the breaches of the schedule, and the schedule.
	search.Counterexample
	Breaches []Breach  `json:"breaches,omitempty"`
	Scenario *Scenario `json:"scenario,omitempty"`
	Outcome  *Outcome  `json:"-"`
	// Preemptions is the preemptions of the schedule the search found:
	// no schedule with fewer breaks a law. Steps is the length of the
	// shortest prefix with no more preemptions that the drain completes
	// into a breach (Shortest: every shorter one was tried). Scenario is
	// that prefix, reduced as Hunt's counterexamples are (unless
	// NoReduce).
	Preemptions int    `json:"preemptions,omitempty"`
	Steps       int    `json:"steps,omitempty"`
	Shortest    bool   `json:"shortest,omitempty"`
	CorpusFile  string `json:"corpusFile,omitempty"`
	Replay      string `json:"replay,omitempty"`
	// Order is where the counterexample lies among every schedule that
	// breaks a law (see CompareOrders): what the merge of shards compares.
	Order *CounterexampleOrder `json:"order,omitempty"`

	// Shard is "i/N" when the search was one shard of N (VerifyShard),
	// and ShardLevels how each level of each world was split.
	Shard       string       `json:"shard,omitempty"`
	ShardLevels []ShardLevel `json:"shardLevels,omitempty"`
}

// VerifyLevel is the search of one preemption bound.
type VerifyLevel struct {
	// World is the search it belongs to (see VerifyResult.World).
	World       int `json:"world,omitempty"`
	Preemptions int `json:"preemptions"`
	// PrefixSteps, when not zero, marks the search for a shorter
	// counterexample: every prefix of this many steps with at most
	// Preemptions preemptions, each completed by the drain.
	PrefixSteps int `json:"prefixSteps,omitempty"`
	// Complete says every schedule of this bound was explored.
	Complete    bool          `json:"complete"`
	Schedules   int64         `json:"schedules"`
	Judged      int64         `json:"judged"`
	States      int64         `json:"states"`
	SleepPruned int64         `json:"sleepPruned"`
	CachePruned int64         `json:"cachePruned"`
	BoundPruned int64         `json:"boundPruned"`
	Elapsed     time.Duration `json:"elapsedNs"`
	// CacheBytes is the memory the search's state cache took once it
	// ended, measured from what it holds, and CacheEntries the states in
	// it.
	CacheBytes   int64 `json:"cacheBytes,omitempty"`
	CacheEntries int64 `json:"cacheEntries,omitempty"`
	// Depths are the decision points of each depth (the number of steps
	// taken before it).
	Depths []VerifyDepth `json:"depths"`
}

// VerifyDepth is one depth of a level's search.
type VerifyDepth struct {
	Depth int `json:"depth"`
	// Nodes are the decision points explored at this depth, States the
	// distinct states first named there, Transitions the choices tried
	// from them.
	Nodes       int64 `json:"nodes"`
	States      int64 `json:"states"`
	Transitions int64 `json:"transitions"`
	SleepPruned int64 `json:"sleepPruned"`
	CachePruned int64 `json:"cachePruned"`
}

// SchedulesPerSecond is the search's speed.
func (r VerifyResult) SchedulesPerSecond() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(r.Schedules) / r.Elapsed.Seconds()
}

// Summary is the one line of the breach of the counterexample's law.
func (r VerifyResult) Summary() string {
	for _, b := range r.Breaches {
		if b.Law == r.Law {
			return b.Summary
		}
	}
	return ""
}

// Explored says which bound the search fully explored.
func (r VerifyResult) Explored() string {
	world := r.Bounds
	if r.World > 0 && r.World <= len(r.Bounds.Then) {
		world = r.Bounds.Then[r.World-1]
	}
	in, before := "", ""
	if len(r.Bounds.Then) > 0 {
		in = fmt.Sprintf(" of search (%d)", r.World+1)
		if r.World > 0 {
			before = fmt.Sprintf("searches (1) to (%d) verified; ", r.World)
		}
	}
	switch {
	case r.PreemptionsExplored < 0:
		return before + "no bound" + in + " fully explored"
	case r.PreemptionsExplored == world.Preemptions:
		return before + "every schedule" + in + " explored"
	}
	return fmt.Sprintf("%severy schedule%s with at most %d preemption(s) (and the other bounds) explored", before, in, r.PreemptionsExplored)
}

// Unreached lists the situations no judged schedule reached.
func (r VerifyResult) Unreached() []string {
	var out []string
	for _, s := range r.Situations() {
		if r.Coverage[s] == 0 {
			out = append(out, s)
		}
	}
	return out
}

// Situations are the situations the verification's coverage is of: a log
// consumer's (its bounds have partitions) or a queue consumer's.
func (r VerifyResult) Situations() []string { return SituationsFor(r.Bounds.Partitions > 0) }

// Report renders the result for a person: the verdict, the bounds, what
// was searched and pruned, the coverage, and the counterexample's report.
func (r VerifyResult) Report() string {
	var b strings.Builder
	switch {
	case r.Failed && r.Preemptions == 0:
		fmt.Fprintf(&b, "COUNTEREXAMPLE %s breaks %s without a preemption; %d step(s) and the drain break it%s\n",
			r.Consumer, r.Law, r.Steps, shortestNote(r.Shortest))
	case r.Failed:
		fmt.Fprintf(&b, "COUNTEREXAMPLE %s breaks %s: no schedule with fewer than %d preemption(s) breaks a law; %d step(s) and the drain break it%s\n",
			r.Consumer, r.Law, r.Preemptions, r.Steps, shortestNote(r.Shortest))
	case r.Verified && r.Shard != "":
		// A shard proves its part only: the merge of every shard's
		// certificate is the verdict.
		fmt.Fprintf(&b, "SHARD %s VERIFIED %s: no schedule below its prefixes breaks a law%s; the verdict is fuzzrun merge's, of every shard\n",
			r.Shard, r.Consumer, unsearchedNote(r.Bounds))
	case r.Verified:
		fmt.Fprintf(&b, "VERIFIED %s within these bounds: no schedule breaks a law%s\n", r.Consumer, unsearchedNote(r.Bounds))
	default:
		fmt.Fprintf(&b, "NOT VERIFIED %s: %s; %s\n", r.Consumer, r.Stopped, r.Explored())
	}
	worlds := append([]Bounds{r.Bounds}, r.Bounds.Then...)
	for i, w := range worlds {
		label := "bounds"
		if len(worlds) > 1 {
			label = fmt.Sprintf("search (%d)", i+1)
		}
		fmt.Fprintf(&b, "%s: %s, on %s\n", label, w.world(), r.Backend)
	}
	if len(r.ConsumerDurations) > 0 {
		ds := make([]string, len(r.ConsumerDurations))
		for i, d := range r.ConsumerDurations {
			ds[i] = d.String()
		}
		fmt.Fprintf(&b, "the consumer's own windows, each a second longer: %s\n", strings.Join(ds, ", "))
	}
	fmt.Fprintf(&b, "searched: %d schedules (%d judged%s), %d distinct states, %s (%.0f schedules/s)\n",
		r.Schedules, r.Judged, cutNote(r.Cut), r.States, r.Elapsed.Round(time.Millisecond), r.SchedulesPerSecond())
	fmt.Fprintf(&b, "pruned: %d choices by partial order, %d states met again by caching, %d choices over the preemption bound\n",
		r.SleepPruned, r.CachePruned, r.BoundPruned)
	if r.Shard != "" {
		fmt.Fprintf(&b, "shard %s: %s\n", r.Shard, shardNote(r.ShardLevels))
	}
	b.WriteString("search  preemptions  complete  schedules  judged  states  sleep-pruned  cache-pruned  time\n")
	for _, l := range r.Levels {
		note := ""
		if l.PrefixSteps > 0 {
			note = fmt.Sprintf("  (prefixes of %d step(s), each completed by the drain)", l.PrefixSteps)
		}
		fmt.Fprintf(&b, "%6d  %11d  %8t  %9d  %6d  %6d  %12d  %12d  %s%s\n", l.World+1, l.Preemptions, l.Complete, l.Schedules, l.Judged, l.States,
			l.SleepPruned, l.CachePruned, l.Elapsed.Round(time.Millisecond), note)
	}
	unreached := r.Unreached()
	sits := r.Situations()
	fmt.Fprintf(&b, "coverage: %d of %d situations reached", len(sits)-len(unreached), len(sits))
	if len(unreached) > 0 {
		fmt.Fprintf(&b, "; never: %s (within these bounds the consumer is not tested there)", strings.Join(unreached, ", "))
	}
	b.WriteString("\n")
	for _, s := range sits {
		fmt.Fprintf(&b, "  %-34s %d\n", s, r.Coverage[s])
	}
	if r.Failed && r.Scenario != nil {
		b.WriteString("\n")
		res := Result{Consumer: r.Consumer, Failed: true, Law: r.Law, Breaches: r.Breaches, Scenario: r.Scenario, Outcome: r.Outcome,
			CorpusFile: r.CorpusFile, Replay: r.Replay}
		b.WriteString(res.Report())
	}
	return b.String()
}

// unsearchedNote names what bounds b leave out, for the verdict's line.
func unsearchedNote(b Bounds) string {
	if u := b.Unsearched(); len(u) > 0 {
		return " (not searched: " + strings.Join(u, ", ") + ")"
	}
	return ""
}

func shortestNote(shortest bool) string {
	if shortest {
		return " (no fewer steps do)"
	}
	return " (the search for fewer steps was stopped)"
}

func cutNote(n int64) string {
	if n == 0 {
		return ""
	}
	return fmt.Sprintf(", %d cut at the step bound and finished by the drain", n)
}
