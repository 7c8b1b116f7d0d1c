package system

import (
	"github.com/idemcheck/idemcheck/impl/adapter/synctime"
	"github.com/idemcheck/idemcheck/impl/contract/broker"
	"github.com/idemcheck/idemcheck/impl/contract/clock"
	"github.com/idemcheck/idemcheck/impl/contract/store"
	"github.com/idemcheck/idemcheck/impl/mutant"
	"github.com/idemcheck/idemcheck/impl/reference/consumer"
	"github.com/idemcheck/idemcheck/impl/reference/membroker"
	"github.com/idemcheck/idemcheck/impl/reference/memstore"
	"github.com/idemcheck/idemcheck/impl/reference/producer"
	"github.com/idemcheck/idemcheck/internal/law"
	"reflect"
)

// Consumption builds the parts of a consumption run. Every constructor gets
// the world's true clock, which is the store's and the broker's own time.
type Consumption struct {
	// NewStore opens the claim store; the runner closes it (store.Closer) at the end.
	NewStore func(storeClock clock.Source) (store.Store, error)
	// NewBroker builds the broker over the consumer groups.
	NewBroker func(c clock.Source, p broker.Policy, groups []string) broker.Broker
	// NewGate builds the producer's idempotency gate.
	NewGate func() broker.Gate
	// Pipeline is the consumer implementation.
	Pipeline func() consumer.Pipeline
	// Conventions are the store's declared conventions (the zero value:
	// the reference store's). The runner sees the store through
	// Conventions.Canonical and lets leases run out by its lease end.
	Conventions store.Conventions
	// TimeNow is set for a store library that reads the machine's clock
	// (time.Now) instead of the clock it is given (WithTimeNowStore):
	// properties.Conformance and CheckProperty (and Hunt given a T) then
	// play every scenario in a testing/synctest bubble of its own, whose
	// clock the store's wrapper keeps at the store's time.
	TimeNow *synctime.Library
}

func referenceConsumption() *Consumption {
	return &Consumption{NewStore: newReferenceStore, NewBroker: newReferenceBroker, NewGate: newReferenceGate, Pipeline: consumer.Reference}
}

// The reference's constructors are named functions, not literals, so that
// IsReference can tell them by their code pointers.
func newReferenceStore(c clock.Source) (store.Store, error) { return memstore.New(c), nil }

func newReferenceBroker(c clock.Source, p broker.Policy, groups []string) broker.Broker {
	return membroker.New(c, p, groups)
}

func newReferenceGate() broker.Gate { return producer.NewGate() }

// WithStore returns the reference consumption parts over another store
// implementation: how the SQL stores and other teams' stores are checked.
func WithStore(name string, newStore func(clock.Source) (store.Store, error)) Target {
	c := referenceConsumption()
	c.NewStore = newStore
	return Target{Name: name, Consumption: c}
}

// WithStoreConventions is WithStore for a store that declares conventions
// other than the reference store's.
func WithStoreConventions(name string, conv store.Conventions, newStore func(clock.Source) (store.Store, error)) Target {
	t := WithStore(name, newStore)
	t.Consumption.Conventions = conv
	return t
}

// WithTimeNowStore returns the reference consumption parts over a store
// library that reads time.Now and takes no clock: its stores are built by
// lib.Open inside a testing/synctest bubble per scenario, wrapped by
// synctime so that every call first brings the bubble's clock to the
// store's time. Goroutines the library leaves running after a scenario are
// a finding unless lib.Lingering says why they may.
func WithTimeNowStore(name string, lib synctime.Library) Target {
	t := WithStore(name, lib.Store())
	t.Consumption.TimeNow = &lib
	return t
}

// consumptionMutant registers the reference with one part swapped.
func consumptionMutant(name, bug, killedBy string, swap func(*Consumption)) {
	c := referenceConsumption()
	swap(c)
	register(Target{Name: name, Mutant: true, Bug: bug, KilledBy: killedBy, Consumption: c})
}

func pipeline(p func() consumer.Pipeline) func(*Consumption) {
	return func(c *Consumption) { c.Pipeline = p }
}

func init() {
	consumptionMutant("no-dedup",
		"the consumer never consults the claim store; only the ledger's unique constraint stops a second credit",
		law.SingleCredit, pipeline(mutant.NoDedup))
	consumptionMutant("check-then-act-claim",
		"the claim reads the record, then overwrites it in a second statement, and the commit trusts the claim",
		law.SingleCredit, pipeline(mutant.CheckThenActClaim))
	consumptionMutant("mark-before-effect",
		"the processed mark is committed before the effect, outside one transaction: a crash in between loses the effect",
		law.NothingLost, pipeline(mutant.MarkBeforeEffect))
	consumptionMutant("effect-and-mark-separate-commits",
		"the effect and the processed mark are two commits: a crash between them credits again after takeover",
		law.Atomicity, pipeline(mutant.EffectAndMarkSeparateCommits))
	consumptionMutant("claim-left-in-processing",
		"a transient failure neither fails nor releases the claim, and claims have no lease: the event never settles",
		law.NothingLost, func(c *Consumption) {
			c.Pipeline = mutant.ClaimLeftInProcessing
			c.NewStore = storeOf(mutant.NewClaimLeftInProcessingStore)
		})
	consumptionMutant("failed-claim-stays-locked",
		"the claim takes over an expired lease but never a record a failed attempt released: after one transient failure every retry is answered locked until the DLQ",
		law.NothingLost, func(c *Consumption) { c.NewStore = storeOf(mutant.NewFailedClaimStaysLocked) })
	consumptionMutant("takeover-without-fencing",
		"the commit does not compare fencing tokens: a slow worker whose lease was taken over still commits",
		law.Fencing, pipeline(mutant.TakeoverWithoutFencing))
	consumptionMutant("dedupe-in-memory-only",
		"duplicates are remembered in process memory and the ledger has no unique constraint: a replay credits again",
		law.ReplayUnchanged, func(c *Consumption) {
			c.Pipeline = mutant.DedupeInMemoryOnly
			c.NewStore = storeOf(mutant.NewDedupeInMemoryOnlyStore)
		})
	consumptionMutant("cleanup-by-local-clock",
		"the retention job computes its cutoff from the worker's skewed wall clock and deletes records still inside the redelivery window",
		law.SingleCredit, pipeline(mutant.CleanupByLocalClock))
	consumptionMutant("dedupe-key-without-consumer",
		"the dedupe key is (tenant, event id): the first consumer group to process an event hides it from the others",
		law.NothingLost, func(c *Consumption) { c.NewStore = storeOf(mutant.NewDedupeKeyWithoutConsumer) })
	consumptionMutant("attempts-counted-on-produce",
		"the broker counts an attempt when the message is produced, so failures reach the DLQ one delivery early",
		law.BoundedAttempts, func(c *Consumption) { c.NewBroker = mutant.NewAttemptsCountedOnProduce })
	consumptionMutant("max-attempts-off-by-one",
		"the broker compares attempts > max_attempts and delivers a failing message once too often",
		law.BoundedAttempts, func(c *Consumption) { c.NewBroker = mutant.NewMaxAttemptsOffByOne })
	consumptionMutant("no-retry-bound",
		"the broker ignores max_attempts and redelivers a failing message forever",
		law.BoundedAttempts, func(c *Consumption) { c.NewBroker = mutant.NewNoRetryBound })
	consumptionMutant("dlq-entry-without-context",
		"DLQ entries lose attempts and last_error",
		law.BoundedAttempts, func(c *Consumption) { c.NewBroker = mutant.NewDLQEntryWithoutContext })
	// The claim stores whose bugs show under real concurrency: the
	// linearizability check catches them (their KilledBy), recording real
	// goroutines against them; the runner plays them like any store.
	consumptionMutant("claim-without-row-lock",
		"the claim reads the record, then writes the acquisition in a second statement without a row lock: two workers both acquire",
		law.Linearizability, func(c *Consumption) { c.NewStore = storeOf(mutant.NewClaimWithoutRowLock) })
	consumptionMutant("takeover-keeps-token",
		"a takeover keeps the expired holder's fencing token: tokens reused",
		law.Linearizability, func(c *Consumption) { c.NewStore = storeOf(mutant.NewTakeoverKeepsToken) })
	consumptionMutant("fail-resets-token",
		"tokens are a per-record version that Fail resets to zero: tokens decreasing and reused",
		law.Linearizability, func(c *Consumption) { c.NewStore = storeOf(mutant.NewFailResetsToken) })
	consumptionMutant("commit-lost-in-write-back",
		"commits land in a write-back cache that claims bypass and the flush drops: success reported, commit lost",
		law.Linearizability, func(c *Consumption) { c.NewStore = storeOf(mutant.NewCommitLostInWriteBack) })
	consumptionMutant("producer-gate-missing",
		"the producer has no idempotency gate: a retried produce of a committed event enqueues it again",
		law.ProducerGate, func(c *Consumption) { c.NewGate = mutant.NewProducerGateMissing })
}

// storeOf adapts a store constructor that cannot fail.
func storeOf(newStore func(clock.Source) store.Store) func(clock.Source) (store.Store, error) {
	return func(c clock.Source) (store.Store, error) { return newStore(c), nil }
}

// IsReference reports whether c is made of the reference's own parts — its
// store, broker, gate and pipeline constructors under the reference
// conventions — and nothing else: a world the explorer may search on its
// compact restatement of the reference (explore/compact).
func IsReference(c *Consumption) bool {
	if c == nil || c.Conventions != (store.Conventions{}) || c.TimeNow != nil {
		return false
	}
	same := func(a, b any) bool {
		va, vb := reflect.ValueOf(a), reflect.ValueOf(b)
		return !va.IsNil() && va.Pointer() == vb.Pointer()
	}
	return same(c.NewStore, newReferenceStore) && same(c.NewBroker, newReferenceBroker) && same(c.NewGate, newReferenceGate) &&
		same(c.Pipeline, consumer.Reference)
}
