package consumerharness

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"pgregory.net/rapid"

	"github.com/idemcheck/idemcheck/corpus/casefile"
	"github.com/idemcheck/idemcheck/faults/gen"
	vocab "github.com/idemcheck/idemcheck/faults/scenario"
	"github.com/idemcheck/idemcheck/impl/contract/broker"
)

// ScenarioVersion is the version of the Scenario's JSON form.
const ScenarioVersion = 1

// Scenario is one run of a team's consumer, as plain data: the events
// produced, the workers of the consumer group, the broker's retry policy
// and the explicit schedule of steps. Nothing about a run comes from
// outside its Scenario: the same Scenario gives the same Trace.
//
// After the steps, the harness drains the system with a fixed schedule
// (round robin over the workers, time moved to the broker's next deadline)
// until it is quiet, judges it, then replays the whole stream, drains again
// and judges again.
type Scenario struct {
	Version int     `json:"version"`
	Workers int     `json:"workers"`
	Policy  Policy  `json:"policy"`
	Events  []Event `json:"events"`
	Steps   []Step  `json:"steps"`
	// Partitions, for a consumer of a log broker (Consumer.Log), is the
	// number of partitions of the topic (1 to 8); 0 for a queue broker.
	Partitions int `json:"partitions,omitempty"`
	// Assignment, for a log broker, names the worker (from 1) that owns
	// each partition at the start; empty, partition p goes to worker
	// p mod Workers + 1 (round robin).
	Assignment []int `json:"assignment,omitempty"`
}

// Policy is the broker's retry policy: broker.Policy, the one
// declaration of it.
type Policy = broker.Policy

// Event is one OrderPaid event the producer publishes at the start.
type Event struct {
	ID     string `json:"id"`
	User   string `json:"user"`
	Amount int64  `json:"amountCents"`
	// Poison events carry an amount of zero or less: a handler must
	// reject them with handler.Poison, and one that applies them or acks
	// them breaks healthy-applied.
	Poison bool `json:"poison,omitempty"`
	// Payload, when set, is the id of an earlier event whose payload this
	// one repeats: the same user, order and amount, under an id of its
	// own. Two distinct events with equal payloads are both to be
	// applied: a consumer that dedupes on a hash of the payload instead
	// of the event's id loses one.
	Payload string `json:"payload,omitempty"`
}

// order is the order id the event's message carries: its own, or the one
// of the event whose payload it repeats.
func (e Event) order() string {
	if e.Payload != "" {
		return "o-" + e.Payload
	}
	return "o-" + e.ID
}

// StepOp names what a step does.
type StepOp string

// The steps of a schedule: the ops the scenario vocabulary's table
// (faults/scenario.Vocabulary) gives WorldConsumer, under the table's
// names. A step that does not apply in the state it
// meets (a worker to run that has nothing to do) does nothing, so that any
// list of steps is a valid schedule and dropping a step keeps it valid.
const (
	// Run moves worker W by one call: an idle worker receives a delivery
	// (the Pick-th eligible message), a worker parked at a call makes it
	// and runs on to its next call, a worker waiting for a lock retries.
	OpRun = StepOp(vocab.OpRun)
	// Crash stops worker W where it is parked: its goroutine never
	// returns into the handler, its connections close (open transactions
	// roll back), its delivery is never acked, and it restarts idle. An
	// idle worker restarts (losing whatever it kept in memory).
	OpCrash = StepOp(vocab.OpCrash)
	// Fail makes the call worker W is parked at (begin, exec, query)
	// return a transient error instead of running, as a lost connection
	// does; at another point it is a Run.
	OpFail = StepOp(vocab.OpFail)
	// Advance moves time forward by Ms milliseconds.
	OpAdvance = StepOp(vocab.OpAdvance)
	// Duplicate makes the broker deliver event Pick's message once more.
	OpDuplicate = StepOp(vocab.OpDuplicate)
	// Replay makes the broker deliver the whole stream again. On a log
	// broker it resets the group's committed offsets to the start of
	// every partition and assigns every partition again, as a team
	// reprocessing the topic does.
	OpReplay = StepOp(vocab.OpReplay)
	// Rebalance moves partition Pick of a log broker to worker W: the
	// worker that owned it keeps running what it holds, but its commits
	// to the broker for it fail (ErrFenced); W is assigned it (its
	// Assigned is called) before it fetches from it. It does nothing on
	// a queue broker, or when W owns the partition already.
	OpRebalance = StepOp(vocab.OpRebalance)
)

// Step is one entry of the schedule.
type Step struct {
	Op     StepOp `json:"op"`
	Worker int    `json:"worker,omitempty"`
	Pick   int    `json:"pick,omitempty"`
	Ms     int64  `json:"ms,omitempty"`
}

// String renders the step for a person: "run w1", "advance 500ms".
func (s Step) String() string {
	switch s.Op {
	case OpAdvance:
		return fmt.Sprintf("advance %dms", s.Ms)
	case OpDuplicate:
		return fmt.Sprintf("duplicate event #%d", s.Pick)
	case OpReplay:
		return "replay"
	case OpRebalance:
		return fmt.Sprintf("rebalance p%d to w%d", s.Pick, s.Worker)
	case OpRun:
		if s.Pick != 0 {
			return fmt.Sprintf("run w%d (pick %d)", s.Worker, s.Pick)
		}
	}
	return fmt.Sprintf("%s w%d", s.Op, s.Worker)
}

// Size is the number of steps of the schedule: the measure of a
// counterexample.
func (s *Scenario) Size() int { return len(s.Steps) }

// Validate reports what makes s unplayable.
func (s *Scenario) Validate() error {
	var errs []string
	if s.Version < 1 || s.Version > ScenarioVersion {
		errs = append(errs, fmt.Sprintf("version %d (this harness reads 1 to %d)", s.Version, ScenarioVersion))
	}
	if s.Workers < 1 || s.Workers > 8 {
		errs = append(errs, fmt.Sprintf("workers %d (1 to 8)", s.Workers))
	}
	if s.Policy.MaxAttempts < 1 {
		errs = append(errs, fmt.Sprintf("policy.maxAttempts %d (at least 1: the first delivery is an attempt)", s.Policy.MaxAttempts))
	}
	if s.Policy.BackoffMs < 0 {
		errs = append(errs, fmt.Sprintf("policy.backoffMs %d (0 or more)", s.Policy.BackoffMs))
	}
	if s.Policy.MaxBackoffMs < s.Policy.BackoffMs {
		errs = append(errs, fmt.Sprintf("policy.maxBackoffMs %d (at least backoffMs, %d)", s.Policy.MaxBackoffMs, s.Policy.BackoffMs))
	}
	if s.Policy.AckTimeoutMs < 1 {
		errs = append(errs, fmt.Sprintf("policy.ackTimeoutMs %d (at least 1)", s.Policy.AckTimeoutMs))
	}
	seen := map[string]bool{}
	for i, e := range s.Events {
		if e.ID == "" || seen[e.ID] {
			errs = append(errs, fmt.Sprintf("event %d: empty or repeated id %q", i, e.ID))
		}
		seen[e.ID] = true
		if e.Poison != (e.Amount <= 0) {
			errs = append(errs, fmt.Sprintf("event %s: poison must be exactly the events with an amount <= 0", e.ID))
		}
		if e.Payload != "" {
			j := slices.IndexFunc(s.Events[:i], func(o Event) bool { return o.ID == e.Payload })
			switch {
			case j < 0:
				errs = append(errs, fmt.Sprintf("event %s: payload %q names no earlier event", e.ID, e.Payload))
			case s.Events[j].User != e.User || s.Events[j].Amount != e.Amount || s.Events[j].Payload != "":
				errs = append(errs, fmt.Sprintf("event %s: a payload repeated from %s has its user and amount (and %s repeats none)", e.ID, e.Payload, e.Payload))
			}
		}
	}
	for i, st := range s.Steps {
		switch st.Op {
		case OpRun, OpCrash, OpFail:
			if st.Worker < 1 || st.Worker > s.Workers {
				errs = append(errs, fmt.Sprintf("step %d: worker %d of %d", i+1, st.Worker, s.Workers))
			}
		case OpAdvance:
			if st.Ms <= 0 {
				errs = append(errs, fmt.Sprintf("step %d: advance by %d ms", i+1, st.Ms))
			}
		case OpDuplicate:
			if st.Pick < 0 || st.Pick >= len(s.Events) {
				errs = append(errs, fmt.Sprintf("step %d: duplicate of event #%d of %d", i+1, st.Pick, len(s.Events)))
			}
		case OpReplay:
		case OpRebalance:
			if st.Worker < 1 || st.Worker > s.Workers {
				errs = append(errs, fmt.Sprintf("step %d: worker %d of %d", i+1, st.Worker, s.Workers))
			}
			if st.Pick < 0 || (s.Partitions > 0 && st.Pick >= s.Partitions) {
				errs = append(errs, fmt.Sprintf("step %d: rebalance of partition %d of %d", i+1, st.Pick, s.Partitions))
			}
		default:
			errs = append(errs, fmt.Sprintf("step %d: unknown op %q", i+1, st.Op))
		}
	}
	errs = append(errs, s.validateLog()...)
	if len(errs) > 0 {
		return fmt.Errorf("consumer scenario: %s", strings.Join(errs, "; "))
	}
	return nil
}

// Marshal is the scenario's JSON form.
func (s *Scenario) Marshal() ([]byte, error) { return json.MarshalIndent(s, "", "  ") }

// UnmarshalScenario parses and validates the JSON form.
func UnmarshalScenario(b []byte) (*Scenario, error) {
	// The shape first: a field unknown or of the wrong type is named by
	// its path (steps[0].worker), not by encoding/json's Go types.
	if err := casefile.CheckJSON(b, reflect.TypeFor[Scenario]()); err != nil {
		return nil, fmt.Errorf("consumer scenario: %w", err)
	}
	var s Scenario
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		return nil, fmt.Errorf("consumer scenario: %w", err)
	}
	if err := s.Validate(); err != nil {
		return nil, err
	}
	return &s, nil
}

// clone deep-copies s.
func (s *Scenario) clone() *Scenario {
	out := *s
	out.Events = append([]Event(nil), s.Events...)
	out.Steps = append([]Step(nil), s.Steps...)
	out.Assignment = slices.Clone(s.Assignment)
	return &out
}

// DefaultPolicy is the broker's retry policy unless a scenario says
// otherwise.
var DefaultPolicy = Policy{MaxAttempts: 4, BackoffMs: 100, MaxBackoffMs: 800, AckTimeoutMs: 5000}

// Generator draws scenarios: one to four events (one in eight poison, one
// in six repeating the payload of the event before under an id of its
// own), one
// to three workers, max_attempts from 1 to the default 4, and up to
// maxSteps steps, mostly runs, some of them in stalls (see stall). It is
// GeneratorWith(maxSteps, nil): the default weights.
func Generator(maxSteps int) *rapid.Generator[*Scenario] {
	return GeneratorWith(maxSteps, nil)
}

// Kinds are the kinds of step a consumer's scenario is drawn from, each
// weighed by gen.Weights: the ops the vocabulary gives WorldConsumer
// (run, fail, crash, advance, duplicate, replay).
func Kinds() []gen.StepKind {
	var out []gen.StepKind
	for _, op := range vocab.OpsOf(vocab.WorldConsumer) {
		out = append(out, gen.StepKind(op))
	}
	return out
}

// defaultWeights are the weights the generator draws with unless told
// otherwise: out of 23 chunks, 13 runs (one of them naming the message it
// receives), 2 crashes, a fail, 2 advances, a duplicate, a replay and 3
// stalls. Changing them changes what every seed draws.
var defaultWeights = map[gen.StepKind]int{
	gen.KindRun: 13, gen.KindCrash: 2, gen.KindFail: 1, gen.KindAdvance: 2, gen.KindDuplicate: 1, gen.KindReplay: 1,
	// Drawn in log scenarios only (LogGeneratorWith): a queue's menu
	// below never offers it.
	gen.KindRebalance: 2,
}

// stallWeight is the weight of a stall (see stall), which is not a kind
// of its own: it is runs and an advance, drawn whenever both are on.
const stallWeight = 3

// DefaultWeight is the weight kind has in a consumer's scenarios unless
// gen.Weights says otherwise; 0 for a kind the consumer does not play.
func DefaultWeight(kind gen.StepKind) int { return defaultWeights[gen.CanonicalKind(kind)] }

// weightOf is kind's weight under w.
func weightOf(w gen.Weights, kind gen.StepKind) int {
	if n, ok := w.Given(kind); ok {
		return n
	}
	return DefaultWeight(kind)
}

// menuEntry is one kind of step of a chunk's menu and its weight.
type menuEntry struct {
	kind gen.StepKind
	n    int
}

// stepMenu is the menu of one chunk of a drawn schedule: the kinds of
// weight above 0, in the order given, as consecutive ranges of one draw
// of 0..total-1, the stall's range last when run and advance are both on.
func stepMenu(kinds []gen.StepKind, weight func(gen.StepKind) int) (menu []menuEntry, total int) {
	for _, k := range kinds {
		if n := weight(k); n > 0 {
			menu = append(menu, menuEntry{k, n})
			total += n
		}
	}
	if weight(gen.KindRun) > 0 && weight(gen.KindAdvance) > 0 {
		total += stallWeight
	}
	return menu, total
}

// ValidateWeights rejects a kind a consumer's scenario is not drawn from
// (skew, cleanup: the reference world's alone) and a weight outside
// 0..gen.MaxWeight.
func ValidateWeights(w gen.Weights) error { return w.ValidateOf(Kinds()) }

// ParseWeights reads weights written KIND=N,KIND=N (e.g. crash=0,fail=3)
// for a consumer's scenarios; the kinds not named keep their default.
func ParseWeights(spec string) (gen.Weights, error) { return gen.ParseWeightsOf(spec, Kinds()) }

// GeneratorWith is Generator drawing each kind of step by its weight in w
// (nil: the defaults, which draw what Generator always drew for the same
// seed). A kind of weight 0 is never drawn; a stall is drawn while both
// run and advance are on. w must pass ValidateWeights; kinds it does not
// know weigh nothing.
func GeneratorWith(maxSteps int, w gen.Weights) *rapid.Generator[*Scenario] {
	// The menu of one chunk, as consecutive ranges of one draw in the
	// order below: with the defaults, the draw of 0..22 it always was.
	menu, total := stepMenu([]gen.StepKind{gen.KindRun, gen.KindCrash, gen.KindFail, gen.KindAdvance, gen.KindDuplicate, gen.KindReplay},
		func(k gen.StepKind) int { return weightOf(w, k) })
	return rapid.Custom(func(t *rapid.T) *Scenario {
		s := &Scenario{Version: ScenarioVersion, Policy: DefaultPolicy}
		// Fewer attempts let a crash or two spend them all; shrinking goes
		// back to the default.
		s.Policy.MaxAttempts -= rapid.IntRange(0, DefaultPolicy.MaxAttempts-1).Draw(t, "fewer attempts")
		s.Workers = rapid.IntRange(1, 3).Draw(t, "workers")
		n := rapid.IntRange(1, 4).Draw(t, "events")
		for i := range n {
			e := Event{ID: fmt.Sprintf("e%d", i+1), User: fmt.Sprintf("u%d", 1+rapid.IntRange(0, 1).Draw(t, "user")), Amount: int64(100 * (i + 1))}
			if rapid.IntRange(0, 7).Draw(t, "poison") == 7 {
				e.Poison, e.Amount = true, 0
			}
			if i > 0 && s.Events[i-1].Payload == "" && rapid.IntRange(0, 5).Draw(t, "collision") == 5 {
				// A payload collision: the event before's payload again.
				o := s.Events[i-1]
				e.User, e.Amount, e.Poison, e.Payload = o.User, o.Amount, o.Poison, o.ID
			}
			s.Events = append(s.Events, e)
		}
		if total == 0 {
			// Every kind off: the schedule is empty, and the drain alone
			// plays the scenario.
			return s
		}
		drawSchedule(t, s, maxSteps, menu, total, 4)
		return s
	})
}

// drawSchedule draws s's steps: up to maxSteps chunks, each one step of
// a kind drawn by its weight in menu (of total, stalls included) or a
// stall. A run's pick, where drawn, is one of picks messages. It is a
// slice generator, so that rapid's shrinker can delete any chunk of steps,
// not only the last ones; the draws are those the queue and log
// generators always made, so a seed draws the scenario it drew before.
func drawSchedule(t *rapid.T, s *Scenario, maxSteps int, menu []menuEntry, total, picks int) {
	chunk := rapid.Custom(func(t *rapid.T) []Step {
		k := rapid.IntRange(0, total-1).Draw(t, "op")
		worker := func() int { return 1 + rapid.IntRange(0, s.Workers-1).Draw(t, "worker") }
		for _, m := range menu {
			if k >= m.n {
				k -= m.n
				continue
			}
			var st Step
			switch m.kind {
			case gen.KindRun:
				st = Step{Op: OpRun, Worker: worker()}
				// The last run of the range names the message it
				// receives: one run in 13 with the queue's defaults.
				if k == m.n-1 {
					st.Pick = rapid.IntRange(0, picks-1).Draw(t, "pick")
				}
			case gen.KindCrash:
				st = Step{Op: OpCrash, Worker: worker()}
			case gen.KindFail:
				st = Step{Op: OpFail, Worker: worker()}
			case gen.KindAdvance:
				st = Step{Op: OpAdvance, Ms: rapid.SampledFrom(advances).Draw(t, "ms")}
			case gen.KindDuplicate:
				st = Step{Op: OpDuplicate, Pick: rapid.IntRange(0, len(s.Events)-1).Draw(t, "event")}
			case gen.KindReplay:
				st = Step{Op: OpReplay}
			case gen.KindRebalance:
				st = Step{Op: OpRebalance, Worker: worker(), Pick: rapid.IntRange(0, s.Partitions-1).Draw(t, "partition")}
			}
			return []Step{st}
		}
		return stall(t, s.Workers)
	})
	for _, c := range rapid.SliceOfN(chunk, 0, maxSteps).Draw(t, "steps") {
		s.Steps = append(s.Steps, c...)
	}
	s.Steps = s.Steps[:min(len(s.Steps), maxSteps)]
	if len(s.Steps) == 0 {
		s.Steps = nil
	}
}

// advances are the amounts of time an Advance step moves, drawn or
// decoded from a fuzzing input: a backoff, a second, past the ack
// timeout, and a minute (past short retention windows of processed
// records).
var advances = []int64{100, 1000, 6000, 60000}

// stall draws a worker that runs several calls on end, then time that
// moves past the ack timeout: the worker is caught in the middle of its
// handler (at a call it has not made yet) while time moves on, its lease
// or its claim's age past their limits and its delivery due again. Bugs of
// leases without fencing, and of clean-ups that run too early, need that
// shape; drawn step by step it is rare.
func stall(t *rapid.T, workers int) []Step {
	w := 1 + rapid.IntRange(0, workers-1).Draw(t, "worker")
	var steps []Step
	for range rapid.IntRange(1, 8).Draw(t, "calls") {
		steps = append(steps, Step{Op: OpRun, Worker: w})
	}
	return append(steps, Step{Op: OpAdvance, Ms: rapid.SampledFrom(advances[2:]).Draw(t, "ms")})
}
