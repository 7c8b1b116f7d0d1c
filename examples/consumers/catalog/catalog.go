// Package catalog lists the example consumers of examples/consumers with
// what the harness must say of each: the correct ones are never flagged,
// each broken one breaks its law. cmd/fuzzrun runs campaigns against them
// by name (fuzzrun consumer NAME), and the broken consumers table of
// docs/consumers.md is measured over them.
package catalog

import (
	"slices"
	"time"

	"github.com/idemcheck/idemcheck/consumertest"
	"github.com/idemcheck/idemcheck/examples/consumers/adr"
	"github.com/idemcheck/idemcheck/examples/consumers/alwaystransient"
	"github.com/idemcheck/idemcheck/examples/consumers/applypoison"
	"github.com/idemcheck/idemcheck/examples/consumers/balance"
	"github.com/idemcheck/idemcheck/examples/consumers/balancesplit"
	"github.com/idemcheck/idemcheck/examples/consumers/claimstuck"
	"github.com/idemcheck/idemcheck/examples/consumers/effectthenmark"
	"github.com/idemcheck/idemcheck/examples/consumers/insertfirst"
	"github.com/idemcheck/idemcheck/examples/consumers/lease"
	"github.com/idemcheck/idemcheck/examples/consumers/lru"
	"github.com/idemcheck/idemcheck/examples/consumers/markfirst"
	"github.com/idemcheck/idemcheck/examples/consumers/nounique"
	"github.com/idemcheck/idemcheck/examples/consumers/poisoneverything"
	"github.com/idemcheck/idemcheck/examples/consumers/splitcheck"
	"github.com/idemcheck/idemcheck/examples/consumers/stuckprocessing"
	"github.com/idemcheck/idemcheck/examples/consumers/ttl"
)

// Entry is one example consumer.
type Entry struct {
	// Name is the consumer's name (-consumer NAME).
	Name string
	// Consumer is the consumer as its test gives it to the harness.
	Consumer consumertest.Consumer
	// Postgres is the consumer written in PostgreSQL's SQL, for an
	// example whose SQL differs between the databases (nil: Consumer
	// runs on both).
	Postgres *consumertest.Consumer
	// Law is the law a broken consumer breaks; "" for a correct one.
	Law string
	// Doc says what the consumer does, in one line.
	Doc string
	// Verify, when set, are the bounds the model checker needs to reach
	// the consumer's bug (time moving by a lease or a retention window,
	// say), where consumertest.DefaultBounds do not; see VerifyBounds.
	Verify *consumertest.Bounds
}

// VerifyBounds are the bounds to model-check e within: e.Verify, or
// consumertest.DefaultBounds.
func (e Entry) VerifyBounds() consumertest.Bounds {
	if e.Verify != nil {
		return *e.Verify
	}
	return consumertest.DefaultBounds
}

// Correct reports whether the harness must never flag e.
func (e Entry) Correct() bool { return e.Law == "" }

// On returns the consumer as written for database db ("sqlite" or
// "postgres").
func (e Entry) On(db string) consumertest.Consumer {
	if db == "postgres" && e.Postgres != nil {
		return *e.Postgres
	}
	return e.Consumer
}

const (
	ledgerEffects   = "SELECT event_id, amount_cents FROM ledger"
	balanceEffects  = "SELECT user_id, balance_cents FROM accounts"
	processedEvents = "SELECT event_id FROM processed_events"
)

// All returns every example, the correct ones first, each group by name.
func All() []Entry {
	es := []Entry{
		{Name: "adr", Doc: "check, effect and mark in one transaction (the ADR pattern)",
			Consumer: consumertest.Consumer{Schema: adr.Schema, Handler: adr.Handle, Effects: consumertest.PerEvent(ledgerEffects), Dedupe: processedEvents}},
		{Name: "insertfirst", Doc: "insert the mark first (a unique violation is a duplicate), effect in the same transaction",
			Consumer: consumertest.Consumer{Schema: insertfirst.Schema, Handler: insertfirst.Handle, Effects: consumertest.PerEvent(ledgerEffects), Dedupe: processedEvents}},
		{Name: "balance", Doc: "balance = balance + amount, guarded by the processed row in the same transaction",
			Consumer: consumertest.Consumer{Schema: balance.Schema, Handler: balance.Handle, Effects: consumertest.Aggregate(balanceEffects), Dedupe: processedEvents}},
		{Name: "splitcheck", Law: consumertest.LawSingleCredit, Doc: "check in one transaction, effect and mark in another: two workers both pass the check",
			Consumer: consumertest.Consumer{Schema: splitcheck.Schema, Handler: splitcheck.Handle, Effects: consumertest.PerEvent(ledgerEffects), Dedupe: processedEvents}},
		{Name: "markfirst", Law: consumertest.LawNothingLost, Doc: "mark committed before the effect: a crash between the commits loses the event",
			Consumer: consumertest.Consumer{Schema: markfirst.Schema, Handler: markfirst.Handle, Effects: consumertest.PerEvent(ledgerEffects), Dedupe: processedEvents}},
		{Name: "effectthenmark", Law: consumertest.LawSingleCredit, Doc: "effect committed before the mark: a crash between the commits and the redelivery credits twice",
			Consumer: consumertest.Consumer{Schema: effectthenmark.Schema, Handler: effectthenmark.Handle, Effects: consumertest.PerEvent(ledgerEffects), Dedupe: processedEvents}},
		{Name: "lru", Law: consumertest.LawSingleCredit, Doc: "an in-process cache of event ids: another worker, a restart or a replay credits twice",
			Consumer: consumertest.Consumer{Schema: lru.Schema, Worker: lru.NewWorker, Effects: consumertest.PerEvent(ledgerEffects)}},
		{Name: "nounique", Law: consumertest.LawSingleCredit, Doc: "no unique constraint, check-then-act without a transaction: two workers both insert",
			Consumer: consumertest.Consumer{Schema: nounique.Schema, Handler: nounique.Handle, Effects: consumertest.PerEvent(ledgerEffects)}},
		{Name: "balancesplit", Law: consumertest.LawSingleCredit, Doc: "balance update whose processed-row check runs in its own transaction: credited twice",
			Consumer: consumertest.Consumer{Schema: balancesplit.Schema, Handler: balancesplit.Handle, Effects: consumertest.Aggregate(balanceEffects), Dedupe: processedEvents}},
		{Name: "claimstuck", Law: consumertest.LawNothingLost, Doc: "a claim table that bumps attempts and nacks but never releases the claim: the event is stuck",
			Consumer: consumertest.Consumer{Schema: claimstuck.Schema, Handler: claimstuck.Handle, Effects: consumertest.PerEvent(ledgerEffects)}},
		{Name: "alwaystransient", Law: consumertest.LawHealthyApplied, Doc: "the INSERT names a column the schema lacks: every delivery is nacked until the DLQ",
			Consumer: consumertest.Consumer{Schema: alwaystransient.Schema, Handler: alwaystransient.Handle, Effects: consumertest.PerEvent(ledgerEffects), Dedupe: processedEvents}},
		{Name: "poisoneverything", Law: consumertest.LawHealthyApplied, Doc: "validates a key format the producer never sends: every message is dead-lettered as poison",
			Consumer: consumertest.Consumer{Schema: poisoneverything.Schema, Handler: poisoneverything.Handle, Effects: consumertest.PerEvent(ledgerEffects), Dedupe: processedEvents}},
		{Name: "applypoison", Law: consumertest.LawHealthyApplied, Doc: "the ADR pattern without the amount check: poison events are credited, not dead-lettered",
			Consumer: consumertest.Consumer{Schema: applypoison.Schema, Handler: applypoison.Handle, Effects: consumertest.PerEvent(ledgerEffects), Dedupe: processedEvents},
			// Its bug needs a poison event.
			Verify: &consumertest.Bounds{Events: []consumertest.Fate{consumertest.FatePoison}, Workers: 1}},
		{Name: "stuckprocessing", Law: consumertest.LawHealthyApplied, Doc: "a claim row left 'processing' by one failed attempt: every redelivery answers locked until the DLQ",
			Consumer: consumertest.Consumer{Schema: stuckprocessing.Schema, Handler: stuckprocessing.Handle, Effects: consumertest.PerEvent(ledgerEffects), Dedupe: stuckprocessing.Dedupe}},
		{Name: "lease", Law: consumertest.LawSingleCredit, Doc: "a claim with a lease taken over once it runs out, the owner's commit not fenced: a slow owner credits again",
			Consumer: consumertest.Consumer{Schema: lease.Schema, Handler: lease.Handle, Effects: consumertest.PerEvent(ledgerEffects)},
			// The owner stalls past its lease: time must move by it.
			Verify: &consumertest.Bounds{Events: []consumertest.Fate{consumertest.FateOK}, Workers: 2, Preemptions: 1, Advances: 1, Durations: []time.Duration{lease.LeaseFor}}},
		{Name: "ttl", Law: consumertest.LawSingleCredit, Doc: "processed records cleaned up by the database's now after 10 seconds, less than the redelivery window",
			Consumer: ttlConsumer(ttl.SQLite, ttl.Short), Postgres: ptr(ttlConsumer(ttl.Postgres, ttl.Short)),
			// A duplicate comes back after the window: time must move past it.
			Verify: &consumertest.Bounds{Events: []consumertest.Fate{consumertest.FateOK}, Workers: 1, Duplicates: 1, Advances: 1, Durations: []time.Duration{11 * time.Second}}},
	}
	for i := range es {
		es[i].Consumer.Name = es[i].Name
		if es[i].Postgres != nil {
			es[i].Postgres.Name = es[i].Name
		}
	}
	return es
}

func ttlConsumer(d ttl.Dialect, window string) consumertest.Consumer {
	return consumertest.Consumer{Schema: ttl.Schema(d), Handler: ttl.Handler(d, window), Effects: consumertest.PerEvent(ledgerEffects), Dedupe: processedEvents}
}

func ptr[T any](v T) *T { return &v }

// Lookup returns the example named name.
func Lookup(name string) (Entry, bool) {
	es := All()
	i := slices.IndexFunc(es, func(e Entry) bool { return e.Name == name })
	if i < 0 {
		return Entry{}, false
	}
	return es[i], true
}

// Names lists the examples' names.
func Names() []string {
	var out []string
	for _, e := range All() {
		out = append(out, e.Name)
	}
	return out
}
