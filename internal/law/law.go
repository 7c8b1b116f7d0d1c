// Package law is the one registry of laws: the named invariants every
// judge of the project checks (package properties and its live judge,
// package explore/compact, package consumertest), each with its stable
// kebab-case ID, its one description (the text docs/invariants.md, `fuzzrun
// list` and the reports show), whether it must hold in every run (Always)
// or be reached by some run (Sometimes: a coverage situation of package
// internal/situation), and what it needs to be judged.
//
// A law may belong to a property of the reference world: the reference
// judges it under the name "property/law" (Qualified), while a judge that
// has no properties (consumertest, the live judge) names it by its ID
// alone. The ID is unique across properties, so both names are one idea.
package law

import (
	"slices"
	"strings"
	"sync"

	"github.com/idemcheck/idemcheck/faults/scenario"
	"github.com/idemcheck/idemcheck/internal/situation"
)

// Mode says how a law must hold.
type Mode uint8

// The modes.
const (
	// Always: the law must hold in every run.
	Always Mode = iota + 1
	// Sometimes: some run of a campaign must reach it (a coverage
	// situation): a clean campaign that never reached it proves nothing
	// about the faults it stands for.
	Sometimes
)

// String names the mode for lists and reports.
func (m Mode) String() string {
	switch m {
	case Always:
		return "always"
	case Sometimes:
		return "sometimes"
	}
	return "unknown"
}

// Needs says what of a run a law needs to be judged: which drivers can
// judge it.
type Needs uint8

// The needs.
const (
	// BlackBox: what any consumer run shows, whatever the consumer is
	// made of: the produces, the deliveries and the answers to them, the
	// effects, the dead-letter queue. Every driver can judge it.
	BlackBox Needs = iota + 1
	// StoreActions: the claim store's own actions (claims, leases, fencing
	// tokens, records, cleanups): only the reference world and the store
	// adapters show them.
	StoreActions
	// Stamps: the projection parts' own readings (an HLC's stamps, a
	// projector's states): only the projection world and the HLC and
	// projector adapters show them.
	Stamps
)

// String names what is needed for lists and reports.
func (n Needs) String() string {
	switch n {
	case BlackBox:
		return "black box"
	case StoreActions:
		return "store actions"
	case Stamps:
		return "stamps"
	}
	return "unknown"
}

// Law is one named law.
type Law struct {
	// ID is kebab-case and stable: corpus files, -off, -property, reports
	// and tests refer to it.
	ID string `json:"id"`
	// Property is the property of the reference world the law belongs to
	// ("" for a property itself, or a law judged on its own).
	Property string `json:"property,omitempty"`
	// Doc says in one line what must hold (or, for a Sometimes law, what
	// counts as reaching it).
	Doc   string `json:"doc"`
	Mode  Mode   `json:"mode"`
	Needs Needs  `json:"needs"`
	// Aliases are the law's former IDs, still read where they are stored
	// (corpus files), never written.
	Aliases []string `json:"aliases,omitempty"`
}

// Qualified is l's name in the reference world: "property/law" for a law of
// a property, the ID otherwise.
func (l Law) Qualified() string {
	if l.Property == "" {
		return l.ID
	}
	return l.Property + "/" + l.ID
}

// The properties: invariants judged as a whole, each made of the laws
// whose Property names it (linearizability, checked apart on real
// goroutines, and runs, the consumer-level law that the handler can be run
// at all, have none). The consumer-level and live judges judge several of
// them directly, by these IDs.
const (
	SingleCredit       = "single-credit"
	ReplayUnchanged    = "replay-unchanged"
	BoundedAttempts    = "bounded-attempts"
	NothingLost        = "nothing-lost"
	Atomicity          = "atomicity"
	Fencing            = "fencing"
	SkewSafeFinalState = "skew-safe-final-state"
	HLCLaws            = "hlc-laws"
	ReplicaConvergence = "replica-convergence"
	ProducerGate       = "producer-gate"
	Linearizability    = "linearizability"
	Runs               = "runs"
	// The laws of a consumer of a log broker (consumertest's Log).
	CommitAfterApply = "commit-after-apply"
	PartitionOrder   = "partition-order"
)

// The laws of the properties. HealthyApplied and DLQMetadata are also
// judged on their own, by the consumer-level and the live judge.
const (
	HealthyApplied      = "healthy-applied"
	DLQMetadata         = "dlq-metadata"
	AtMostOnce          = "at-most-once"
	ClaimStoreDedupes   = "claim-store-dedupes"
	RetentionWindow     = "retention-window"
	LedgerUnchanged     = "ledger-unchanged"
	AttemptsCount       = "attempts-count-deliveries"
	AtMostMaxAttempts   = "at-most-max-attempts"
	DLQAfterMaxAttempts = "dlq-after-max-attempts"
	PoisonAtOnce        = "poison-at-once"
	Quiesces            = "quiesces"
	CreditedOrDLQ       = "credited-or-dlq"
	NotStuck            = "not-stuck"
	EffectWithMark      = "effect-with-mark"
	StaleChangesNothing = "stale-token-changes-nothing"
	CausalFinalState    = "causal-final-state"
	Monotonic           = "monotonic"
	MergeDominates      = "merge-dominates"
	PhysicalBound       = "physical-bound"
	OwnNode             = "own-node"
	Causality           = "causality"
	RefuseBeyondOffset  = "refuse-only-beyond-max-offset"
	Converge            = "converge"
	NotReenqueued       = "committed-not-reenqueued"
	DLQOnce             = "dlq-once"
)

// registry is every Always law: each property, followed by its laws in
// the order its verdicts report them, then the laws of no property.
var registry = []Law{
	{ID: SingleCredit, Doc: "no event's effect is applied twice: each event is credited at most once per consumer group and event id", Needs: BlackBox},
	{ID: AtMostOnce, Property: SingleCredit, Doc: "no event has two ledger entries for one consumer", Needs: BlackBox},
	{ID: ClaimStoreDedupes, Property: SingleCredit, Doc: "the ledger's unique constraint (defence in depth) never has to stop a second credit that the claim store let through, unless the key's record was legitimately removed by retention first", Needs: StoreActions},
	{ID: RetentionWindow, Property: SingleCredit, Doc: "a cleanup never removes a record younger than the retention window by the store's own clock", Needs: StoreActions},

	{ID: ReplayUnchanged, Doc: "replaying the whole stream once quiet leaves the effects of applied events unchanged: none changes or repeats, and only events that sat in the dead-letter queue may be applied by the replay", Needs: BlackBox},
	{ID: LedgerUnchanged, Property: ReplayUnchanged, Doc: "after the replay every ledger entry is as it was and none repeats; only an event that sat in the DLQ may be credited by it", Needs: BlackBox},

	{ID: BoundedAttempts, Doc: "attempts count deliveries; no message is delivered more than max_attempts times; retries reach the dead-letter queue after exactly max_attempts, poison at once; dead-letter entries carry attempts, last error and key", Needs: BlackBox},
	{ID: AttemptsCount, Property: BoundedAttempts, Doc: "the k-th delivery of a message shows attempts = k", Needs: BlackBox},
	{ID: AtMostMaxAttempts, Property: BoundedAttempts, Doc: "no message is delivered more than max_attempts times", Needs: BlackBox},
	{ID: DLQAfterMaxAttempts, Property: BoundedAttempts, Doc: "a message dead-lettered for retries was delivered exactly max_attempts times", Needs: BlackBox},
	{ID: PoisonAtOnce, Property: BoundedAttempts, Doc: "poison is dead-lettered by the delivery that found it, never nacked for retry", Needs: BlackBox},
	{ID: DLQMetadata, Property: BoundedAttempts, Doc: "a DLQ entry carries attempts, last_error, its original topic and its key", Needs: BlackBox},

	{ID: NothingLost, Doc: "once the system is quiet, every produced event has its effect exactly once per consumer group or sits in that group's dead-letter queue, and nothing stays pending, in flight or stuck in processing", Needs: BlackBox},
	{ID: Quiesces, Property: NothingLost, Doc: "the system quiesces: nothing stays pending or in flight forever", Needs: BlackBox},
	{ID: CreditedOrDLQ, Property: NothingLost, Doc: "every produced event is credited exactly once per consumer or sits in that consumer's DLQ; poison is never credited", Needs: BlackBox},
	{ID: HealthyApplied, Property: NothingLost, Aliases: []string{"healthy-credited"},
		Doc:   "a healthy event ends applied, dead-lettered only when the harness's own faults (injected failures, crashes, takeovers, ack timeouts, a claim or lock held by a delivery they left unsettled) spent every attempt; poison is dead-lettered, never applied",
		Needs: BlackBox},
	{ID: NotStuck, Property: NothingLost, Doc: "every record left in processing can be claimed once its hold ended (its lease ran out, or a mark with no lease expired)", Needs: StoreActions},

	{ID: Atomicity, Doc: "the effects and the dedupe records agree: effect and mark land together, never an effect without its processed record or a record without its effect", Needs: BlackBox},
	{ID: EffectWithMark, Property: Atomicity, Doc: "after every action, every ledger entry has its processed record and every processed record its entry (but for records legitimately cleaned up)", Needs: BlackBox},

	{ID: Fencing, Doc: "a commit, mark or release carrying a stale fencing token is rejected and changes nothing", Needs: StoreActions},
	{ID: StaleChangesNothing, Property: Fencing, Doc: "a commit, mark or release with a token older than the newest issued for its key is rejected and changes neither records nor ledger", Needs: StoreActions},

	{ID: SkewSafeFinalState, Doc: "every projector the target claims correct ends each order in the state its causal history ends in, whatever the clock skew and delivery order (the timestamp baseline is shown failing)", Needs: Stamps},
	{ID: CausalFinalState, Property: SkewSafeFinalState, Doc: "every claimed projector on every replica ends each order where its causal history ends", Needs: Stamps},

	{ID: HLCLaws, Doc: "every node's HLC is monotonic (also across clock steps backwards), a merge is later than the stamp received, stamps are never behind the physical clock and carry their node, and causally later events have later stamps", Needs: Stamps},
	{ID: Monotonic, Property: HLCLaws, Doc: "each reading of a node is later than its previous one, also across a wall-clock step backwards", Needs: Stamps},
	{ID: MergeDominates, Property: HLCLaws, Doc: "a merge is later than the remote stamp it received", Needs: Stamps},
	{ID: PhysicalBound, Property: HLCLaws, Doc: "a stamp's wall is never behind the node's physical clock at the time", Needs: Stamps},
	{ID: OwnNode, Property: HLCLaws, Doc: "a node stamps with its own name", Needs: Stamps},
	{ID: Causality, Property: HLCLaws, Doc: "an event that happened before another has a smaller stamp", Needs: Stamps},
	{ID: RefuseBeyondOffset, Property: HLCLaws, Doc: "a clock refuses a remote stamp only when it is further ahead of the physical clock than the max offset the clock declares", Needs: Stamps},

	{ID: ReplicaConvergence, Doc: "replicas of a claimed projector that saw the same events, in any order and with any duplicates, end in the same state", Needs: Stamps},
	{ID: Converge, Property: ReplicaConvergence, Doc: "replicas of a claimed projector that saw the same events end in the same state", Needs: Stamps},

	{ID: ProducerGate, Doc: "a key whose produce is COMMITTED is never enqueued again, by the producer or by a DLQ publish", Needs: BlackBox},
	{ID: NotReenqueued, Property: ProducerGate, Doc: "a key whose produce committed is never enqueued by the producer again", Needs: BlackBox},
	{ID: DLQOnce, Property: ProducerGate, Doc: "a message is dead-lettered at most once", Needs: BlackBox},

	{ID: Linearizability, Doc: "the claim store is linearizable under real concurrent goroutines: every history of claims, commits, fails and reads has a linearization allowed by the store's sequential model", Needs: StoreActions},

	{ID: CommitAfterApply, Doc: "on a log broker, a committed offset never runs ahead of the effects: when a commit of offset c for a partition lands, every record of that partition below c has its effect committed in the database (or sits in the consumer's own dead letters)", Needs: BlackBox},
	{ID: PartitionOrder, Doc: "on a log broker, a consumer that claims per-partition order applies each partition's records in offset order, as the effects query returns its rows", Needs: BlackBox},

	{ID: Runs, Doc: "the handler does not panic, leave a transaction open, hang outside the database, loop forever, or leave goroutines running", Needs: BlackBox},
}

func init() {
	for i := range registry {
		registry[i].Mode = Always
	}
}

// mu guards registry against Register.
var mu sync.RWMutex

// Register adds an Always law to the registry, after its property's laws
// (or at the end, for a law of no property), and returns what removes it
// again: how a law kept outside this package, a test's, joins the judges
// (its judge function goes to package internal/history, Register there).
func Register(l Law) (remove func()) {
	mu.Lock()
	defer mu.Unlock()
	if slices.ContainsFunc(registry, func(r Law) bool { return r.ID == l.ID }) {
		panic("law: duplicate law " + l.ID)
	}
	l.Mode = Always
	at := len(registry)
	for i, r := range registry {
		if l.Property != "" && (r.ID == l.Property || r.Property == l.Property) {
			at = i + 1
		}
	}
	registry = slices.Insert(registry, at, l)
	return func() {
		mu.Lock()
		defer mu.Unlock()
		registry = slices.DeleteFunc(registry, func(r Law) bool { return r.ID == l.ID })
	}
}

// All returns every law: the Always laws in registry order, then one
// Sometimes law per coverage situation name (Situations).
func All() []Law { return append(AlwaysLaws(), Situations()...) }

// AlwaysLaws returns the laws that must hold in every run, in registry order:
// each property followed by its laws.
func AlwaysLaws() []Law {
	mu.RLock()
	defer mu.RUnlock()
	return slices.Clone(registry)
}

// Situations returns the coverage situations as Sometimes laws, one per
// name, in report order. They stay registered in package
// internal/situation, where their order gives them their bit in a
// coverage set and their kind says which world reaches them; a situation
// of the consumer-level or the live world needs a black box, one of the
// runner's worlds the store's actions or the stamps.
func Situations() []Law {
	var out []Law
	seen := map[string]bool{}
	for _, s := range situation.All() {
		if seen[s.Name] {
			continue // the same situation reached in two worlds: one law
		}
		seen[s.Name] = true
		needs := BlackBox
		switch s.Kind {
		case scenario.KindConsumption:
			needs = StoreActions
		case scenario.KindProjection:
			needs = Stamps
		}
		out = append(out, Law{ID: s.Name, Doc: s.Doc, Mode: Sometimes, Needs: needs})
	}
	return out
}

// Lookup returns the law whose ID, qualified name or alias is name.
func Lookup(name string) (Law, bool) {
	name = Canonical(name)
	if l, ok := lookupAlways(name); ok {
		return l, true
	}
	for _, l := range Situations() {
		if l.ID == name {
			return l, true
		}
	}
	return Law{}, false
}

// lookupAlways finds an Always law by ID or qualified name without
// copying the registry: judges look laws up on every run.
func lookupAlways(name string) (Law, bool) {
	mu.RLock()
	defer mu.RUnlock()
	for _, l := range registry {
		if l.ID == name || (l.Property != "" && len(name) == len(l.Property)+1+len(l.ID) && l.Qualified() == name) {
			return l, true
		}
	}
	return Law{}, false
}

// Of returns the laws of property p, in the order its verdicts report
// them.
func Of(p string) []Law {
	mu.RLock()
	defer mu.RUnlock()
	var out []Law
	for _, l := range registry {
		if l.Property == p {
			out = append(out, l)
		}
	}
	return out
}

// Doc returns the description of the law named id ("" for no law).
func Doc(id string) string {
	l, _ := Lookup(id)
	return l.Doc
}

// Canonical returns name with every former ID in it replaced by the
// current one: a law ("healthy-credited"), or either half of a
// "property/law" ("nothing-lost/healthy-credited"). It is what a loader of
// stored cases calls, so that a case written before a rename still loads.
func Canonical(name string) string {
	if p, l, ok := strings.Cut(name, "/"); ok {
		return Canonical(p) + "/" + Canonical(l)
	}
	mu.RLock()
	defer mu.RUnlock()
	for _, l := range registry {
		if slices.Contains(l.Aliases, name) {
			return l.ID
		}
	}
	return name
}
