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
	"github.com/idemcheck/idemcheck/consumertest/handler"
	"github.com/idemcheck/idemcheck/consumertest/laws"
	"github.com/idemcheck/idemcheck/consumertest/scenario"
	"github.com/idemcheck/idemcheck/examples/consumers/adr"
	"github.com/idemcheck/idemcheck/examples/consumers/alwaystransient"
	"github.com/idemcheck/idemcheck/examples/consumers/applypoison"
	"github.com/idemcheck/idemcheck/examples/consumers/balance"
	"github.com/idemcheck/idemcheck/examples/consumers/balancesplit"
	"github.com/idemcheck/idemcheck/examples/consumers/claimstuck"
	"github.com/idemcheck/idemcheck/examples/consumers/deadline"
	"github.com/idemcheck/idemcheck/examples/consumers/effectthenmark"
	"github.com/idemcheck/idemcheck/examples/consumers/insertfirst"
	"github.com/idemcheck/idemcheck/examples/consumers/lease"
	"github.com/idemcheck/idemcheck/examples/consumers/logapplythencommit"
	"github.com/idemcheck/idemcheck/examples/consumers/logautocommit"
	"github.com/idemcheck/idemcheck/examples/consumers/logcommitfirst"
	"github.com/idemcheck/idemcheck/examples/consumers/logdeadletters"
	"github.com/idemcheck/idemcheck/examples/consumers/logoffsets"
	"github.com/idemcheck/idemcheck/examples/consumers/lru"
	"github.com/idemcheck/idemcheck/examples/consumers/markfirst"
	"github.com/idemcheck/idemcheck/examples/consumers/migrations"
	"github.com/idemcheck/idemcheck/examples/consumers/nounique"
	"github.com/idemcheck/idemcheck/examples/consumers/ownmessage"
	"github.com/idemcheck/idemcheck/examples/consumers/ownretry"
	"github.com/idemcheck/idemcheck/examples/consumers/payloadhash"
	"github.com/idemcheck/idemcheck/examples/consumers/poisoneverything"
	"github.com/idemcheck/idemcheck/examples/consumers/secondconn"
	"github.com/idemcheck/idemcheck/examples/consumers/splitcheck"
	"github.com/idemcheck/idemcheck/examples/consumers/stuckprocessing"
	"github.com/idemcheck/idemcheck/examples/consumers/sweeper"
	"github.com/idemcheck/idemcheck/examples/consumers/tablefirstuse"
	"github.com/idemcheck/idemcheck/examples/consumers/ttl"
	"github.com/idemcheck/idemcheck/examples/consumers/upsertfirst"
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
	// say), where consumertest.DefaultBounds do not, or the heavier
	// bounds a correct consumer is proved within (fuzzrun consumer NAME
	// -explore); see VerifyBounds.
	Verify *consumertest.Bounds
	// Quick, when set, are the bounds a unit test proves a correct
	// consumer within (TestVerifyProvesTheCorrectExamples); see
	// QuickBounds.
	Quick *consumertest.Bounds
	// SQLite, when set, are the SQLite settings the team runs the
	// consumer with (consumertest.SQLite); "": SQLite's defaults.
	SQLite string
}

// VerifyBounds are the bounds to model-check e within: e.Verify, or
// consumertest.DefaultBounds.
func (e Entry) VerifyBounds() consumertest.Bounds {
	if e.Verify != nil {
		return *e.Verify
	}
	return consumertest.DefaultBounds
}

// QuickBounds are the bounds a unit test proves a correct e within:
// e.Quick, or one event and its duplicate, two workers, two preemptions,
// a crash and an injected failure.
func (e Entry) QuickBounds() consumertest.Bounds {
	if e.Quick != nil {
		return *e.Quick
	}
	return consumertest.Bounds{Events: one, Workers: 2, Preemptions: 2, Crashes: 1, Failures: 1, Duplicates: 1}
}

// Options are the options e runs with on SQLite: its settings.
func (e Entry) Options() []consumertest.Option {
	if e.SQLite == "" {
		return nil
	}
	return []consumertest.Option{consumertest.SQLite(e.SQLite)}
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
	paymentEffects  = "SELECT message_id, amount_cents FROM payments"
)

// one is a single ok event, for bounds.
var one = []scenario.Fate{scenario.FateOK}

// All returns every example, the correct ones first, each group by name.
func All() []Entry {
	es := []Entry{
		{Name: "adr", Doc: "check, effect and mark in one transaction (the ADR pattern)",
			Consumer: consumertest.Consumer{Schema: adr.Schema, Handler: adr.Handle, Effects: consumertest.PerEvent(ledgerEffects), Dedupe: processedEvents}},
		{Name: "insertfirst", Doc: "insert the mark first (a unique violation is a duplicate), effect in the same transaction",
			Consumer: consumertest.Consumer{Schema: insertfirst.Schema, Handler: insertfirst.Handle, Effects: consumertest.PerEvent(ledgerEffects), Dedupe: processedEvents}},
		{Name: "balance", Doc: "balance = balance + amount, guarded by the processed row in the same transaction",
			Consumer: consumertest.Consumer{Schema: balance.Schema, Handler: balance.Handle, Effects: consumertest.Aggregate(balanceEffects), Dedupe: processedEvents}},
		{Name: "splitcheck", Law: laws.SingleCredit, Doc: "check in one transaction, effect and mark in another: two workers both pass the check",
			Consumer: consumertest.Consumer{Schema: splitcheck.Schema, Handler: splitcheck.Handle, Effects: consumertest.PerEvent(ledgerEffects), Dedupe: processedEvents}},
		{Name: "markfirst", Law: laws.NothingLost, Doc: "mark committed before the effect: a crash between the commits loses the event",
			Consumer: consumertest.Consumer{Schema: markfirst.Schema, Handler: markfirst.Handle, Effects: consumertest.PerEvent(ledgerEffects), Dedupe: processedEvents}},
		{Name: "effectthenmark", Law: laws.SingleCredit, Doc: "effect committed before the mark: a crash between the commits and the redelivery credits twice",
			Consumer: consumertest.Consumer{Schema: effectthenmark.Schema, Handler: effectthenmark.Handle, Effects: consumertest.PerEvent(ledgerEffects), Dedupe: processedEvents}},
		{Name: "lru", Law: laws.SingleCredit, Doc: "an in-process cache of event ids: another worker, a restart or a replay credits twice",
			Consumer: consumertest.Consumer{Schema: lru.Schema, Worker: lru.NewWorker, Effects: consumertest.PerEvent(ledgerEffects)}},
		{Name: "nounique", Law: laws.SingleCredit, Doc: "no unique constraint, check-then-act without a transaction: two workers both insert",
			Consumer: consumertest.Consumer{Schema: nounique.Schema, Handler: nounique.Handle, Effects: consumertest.PerEvent(ledgerEffects)}},
		{Name: "balancesplit", Law: laws.SingleCredit, Doc: "balance update whose processed-row check runs in its own transaction: credited twice",
			Consumer: consumertest.Consumer{Schema: balancesplit.Schema, Handler: balancesplit.Handle, Effects: consumertest.Aggregate(balanceEffects), Dedupe: processedEvents}},
		{Name: "claimstuck", Law: laws.NothingLost, Doc: "a claim table that bumps attempts and nacks but never releases the claim: the event is stuck",
			Consumer: consumertest.Consumer{Schema: claimstuck.Schema, Handler: claimstuck.Handle, Effects: consumertest.PerEvent(ledgerEffects)}},
		{Name: "alwaystransient", Law: laws.HealthyApplied, Doc: "the INSERT names a column the schema lacks: every delivery is nacked until the DLQ",
			Consumer: consumertest.Consumer{Schema: alwaystransient.Schema, Handler: alwaystransient.Handle, Effects: consumertest.PerEvent(ledgerEffects), Dedupe: processedEvents}},
		{Name: "poisoneverything", Law: laws.HealthyApplied, Doc: "validates a key format the producer never sends: every message is dead-lettered as poison",
			Consumer: consumertest.Consumer{Schema: poisoneverything.Schema, Handler: poisoneverything.Handle, Effects: consumertest.PerEvent(ledgerEffects), Dedupe: processedEvents}},
		{Name: "applypoison", Law: laws.HealthyApplied, Doc: "the ADR pattern without the amount check: poison events are credited, not dead-lettered",
			Consumer: consumertest.Consumer{Schema: applypoison.Schema, Handler: applypoison.Handle, Effects: consumertest.PerEvent(ledgerEffects), Dedupe: processedEvents},
			// Its bug needs a poison event.
			Verify: &consumertest.Bounds{Events: []scenario.Fate{scenario.FatePoison}, Workers: 1}},
		{Name: "stuckprocessing", Law: laws.HealthyApplied, Doc: "a claim row left 'processing' by one failed attempt: every redelivery answers locked until the DLQ",
			Consumer: consumertest.Consumer{Schema: stuckprocessing.Schema, Handler: stuckprocessing.Handle, Effects: consumertest.PerEvent(ledgerEffects), Dedupe: stuckprocessing.Dedupe}},
		{Name: "lease", Law: laws.SingleCredit, Doc: "a claim with a lease taken over once it runs out, the owner's commit not fenced: a slow owner credits again",
			Consumer: consumertest.Consumer{Schema: lease.Schema, Handler: lease.Handle, Effects: consumertest.PerEvent(ledgerEffects)},
			// As a team with claims and leases runs SQLite: BEGIN
			// IMMEDIATE and a busy timeout (with the defaults it breaks
			// healthy-applied first).
			SQLite: ownretrySQLite,
			// The owner stalls past its lease: time must move by it.
			Verify: &consumertest.Bounds{Events: []scenario.Fate{scenario.FateOK}, Workers: 2, Preemptions: 1, Advances: 1, Durations: []time.Duration{lease.LeaseFor}}},
		{Name: "ttl", Law: laws.SingleCredit, Doc: "processed records cleaned up by the database's now after 10 seconds, less than the redelivery window",
			Consumer: ttlConsumer(ttl.SQLite, ttl.Short), Postgres: ptr(ttlConsumer(ttl.Postgres, ttl.Short)),
			// A duplicate comes back after the window: time must move past it.
			Verify: &consumertest.Bounds{Events: []scenario.Fate{scenario.FateOK}, Workers: 1, Duplicates: 1, Advances: 1, Durations: []time.Duration{11 * time.Second}}},
	}
	es = append(es[:3], append(newCorrect(), es[3:]...)...)
	es = append(es, newBroken()...)
	for i := range es {
		es[i].Consumer.Name = es[i].Name
		if es[i].Postgres != nil {
			es[i].Postgres.Name = es[i].Name
		}
	}
	return es
}

// newCorrect are the correct examples of deadlines, upserts, libraries
// with tables, goroutines and connections of their own, migrations by
// code, a message type of the team's own and a retry count of its own.
func newCorrect() []Entry {
	p4 := scenario.VerifyPolicy
	p4.MaxAttempts = 4
	return []Entry{
		{Name: "deadline", Doc: "the ADR transaction under context.WithTimeout(30s): an expiry mid-transaction rolls it all back",
			Consumer: consumertest.Consumer{Schema: deadline.Schema, Handler: deadline.Handle, Effects: consumertest.PerEvent(ledgerEffects), Dedupe: processedEvents},
			// Time moves by the whole deadline once, anywhere.
			Verify: &consumertest.Bounds{Events: one, Workers: 2, Preemptions: 2, Crashes: 1, Failures: 1, Duplicates: 1, Advances: 1, Durations: []time.Duration{deadline.Timeout}},
			Quick:  &consumertest.Bounds{Events: one, Workers: 2, Preemptions: 1, Duplicates: 1, Advances: 1, Durations: []time.Duration{deadline.Timeout}}},
		{Name: "deadline-cancel", Doc: "the ADR transaction under context.WithCancel, cancelled after the commit",
			Consumer: consumertest.Consumer{Schema: deadline.Schema, Handler: deadline.HandleCancel, Effects: consumertest.PerEvent(ledgerEffects), Dedupe: processedEvents}},
		{Name: "upsertfirst", Doc: "claim with INSERT ... ON CONFLICT DO NOTHING, RowsAffected 0 is a duplicate, effect in the same transaction",
			Consumer: consumertest.Consumer{Schema: upsertfirst.Schema, Handler: upsertfirst.Handle, Effects: consumertest.PerEvent(ledgerEffects), Dedupe: processedEvents}},
		{Name: "tablefirstuse", Doc: "an inbox library that creates its tables (IF NOT EXISTS) in the Worker factory",
			Consumer: consumertest.Consumer{Schema: tablefirstuse.Schema, Worker: tablefirstuse.NewWorker, Effects: consumertest.PerEvent(ledgerEffects)},
			// One event: two take the search past minutes.
			Verify: &consumertest.Bounds{Events: one, Workers: 2, Preemptions: 2, Crashes: 1, Failures: 1, Duplicates: 1},
			Quick:  &consumertest.Bounds{Events: one, Workers: 2, Preemptions: 2, Crashes: 1, Duplicates: 1}},
		{Name: "tablefirstuse-lazy", Doc: "the same inbox library creating its tables on the first message, in the handler",
			Consumer: consumertest.Consumer{Schema: tablefirstuse.Schema, Worker: tablefirstuse.NewLazyWorker, Effects: consumertest.PerEvent(ledgerEffects)},
			Verify:   &consumertest.Bounds{Events: one, Workers: 2, Preemptions: 1, Crashes: 1, Failures: 1, Duplicates: 1},
			Quick:    &consumertest.Bounds{Events: one, Workers: 2, Preemptions: 1, Crashes: 1, Duplicates: 1}},
		{Name: "sweeper", Doc: "a key store whose constructor starts a clean-up ticker (SQL DELETE), closed with the worker",
			Consumer: consumertest.Consumer{Schema: sweeper.Schema, Worker: sweeper.NewWorker, Effects: consumertest.PerEvent(ledgerEffects), Dedupe: sweeperKeys},
			// Time moves by the sweep period: the sweeps interleave.
			Verify: &consumertest.Bounds{Events: one, Workers: 2, Preemptions: 1, Crashes: 1, Duplicates: 1, Advances: 1, Durations: []time.Duration{time.Minute}},
			Quick:  &consumertest.Bounds{Events: one, Workers: 1, Crashes: 1, Duplicates: 1, Advances: 1, Durations: []time.Duration{time.Minute}}},
		{Name: "sweeper-lingering", Doc: "the same key store never closed, its sweeper declared with Consumer.Lingering",
			Consumer: consumertest.Consumer{Schema: sweeper.Schema, Worker: sweeper.NewWorkerNeverClosed, Effects: consumertest.PerEvent(ledgerEffects), Dedupe: sweeperKeys,
				Lingering: "the key store's clean-up runs for the life of the process"},
			Verify: &consumertest.Bounds{Events: one, Workers: 2, Preemptions: 1, Duplicates: 1, Advances: 1, Durations: []time.Duration{time.Minute}},
			Quick:  &consumertest.Bounds{Events: one, Workers: 1, Crashes: 1, Duplicates: 1, Advances: 1, Durations: []time.Duration{time.Minute}}},
		{Name: "secondconn", Doc: "a library that reads on a second connection while its own transaction holds the write lock",
			Consumer: consumertest.Consumer{Schema: secondconn.Schema, Worker: secondconn.NewWorker, Effects: consumertest.PerEvent(postingEffects)},
			// Its team's settings: with SQLite's defaults, two deferred
			// transactions deadlock on the second connection's read.
			SQLite: secondconn.SQLiteParams,
			Quick:  &consumertest.Bounds{Events: one, Workers: 2, Preemptions: 1, Crashes: 1, Duplicates: 1}},
		{Name: "migrations", Doc: "the schema applied by code (Consumer.Setup): SQL files with comments, quotes, trigger and PL/pgSQL bodies",
			Consumer: migrationsConsumer(migrations.SQLite), Postgres: ptr(migrationsConsumer(migrations.Postgres)),
			// A poison event only the migrated trigger refuses.
			Verify: &consumertest.Bounds{Events: []scenario.Fate{scenario.FateOK, scenario.FatePoison}, Workers: 2, Preemptions: 2, Crashes: 1, Failures: 1, Duplicates: 1},
			Quick:  &consumertest.Bounds{Events: []scenario.Fate{scenario.FateOK, scenario.FatePoison}, Workers: 1, Crashes: 1, Failures: 1, Duplicates: 1}},
		{Name: "ownmessage", Doc: "the team's own message type (headers, JSON body) through HandlerOf, UUID event ids (EventIDs)",
			Consumer: consumertest.Consumer{Schema: ownmessage.Schema, Handler: handler.HandlerOf(ownmessage.FromHarness, ownmessage.Handle),
				Effects: consumertest.PerEvent(paymentEffects), Dedupe: "SELECT message_id FROM processed_messages", EventIDs: ownmessage.EventID}},
		{Name: "ownretry", Doc: "its own failure count and dead_letters table, an event parked after 3 failures and acked (DeadLetters)",
			Consumer: ownretryConsumer(ownretry.Handle),
			// Its team's settings: SQLite's defaults crash the harness
			// today (a rows.Close retried on busy, reported).
			SQLite: ownretrySQLite,
			// The broker retries four times, as Check's: the consumer
			// parks an event at its third failure, before the broker.
			Verify: &consumertest.Bounds{Events: []scenario.Fate{scenario.Transient(3), scenario.FateOK}, Workers: 2, Preemptions: 2, Crashes: 1, Duplicates: 1, Policy: p4},
			Quick:  &consumertest.Bounds{Events: []scenario.Fate{scenario.Transient(3)}, Workers: 2, Preemptions: 1, Crashes: 1, Duplicates: 1, Policy: p4}},
	}
}

// newBroken are the broken examples that go with newCorrect.
func newBroken() []Entry {
	p4 := scenario.VerifyPolicy
	p4.MaxAttempts = 4
	return []Entry{
		{Name: "deadline-split", Law: laws.SingleCredit, Doc: "credit committed, then the mark in a call of its own: a deadline expired between them, the redelivery credits again",
			Consumer: consumertest.Consumer{Schema: deadline.Schema, Handler: deadline.HandleSplit, Effects: consumertest.PerEvent(ledgerEffects), Dedupe: processedEvents},
			// The worker stalls past its deadline: time must move by it.
			Verify: &consumertest.Bounds{Events: one, Workers: 1, Advances: 1, Durations: []time.Duration{deadline.SplitTimeout}}},
		{Name: "sweeper-undeclared", Law: laws.Runs, Doc: "a key store never closed, its sweeper goroutine undeclared: left running by the Worker factory",
			Consumer: consumertest.Consumer{Schema: sweeper.Schema, Worker: sweeper.NewWorkerNeverClosed, Effects: consumertest.PerEvent(ledgerEffects), Dedupe: sweeperKeys},
			Verify:   &consumertest.Bounds{Events: one, Workers: 1}},
		{Name: "payloadhash", Law: laws.NothingLost, Doc: "dedupes on a SHA-256 of the body, not the message-id: a second payment with the same body is lost",
			Consumer: consumertest.Consumer{Schema: payloadhash.Schema, Handler: handler.HandlerOf(ownmessage.FromHarness, payloadhash.Handle),
				Effects: consumertest.PerEvent(paymentEffects), EventIDs: ownmessage.EventID},
			// An event and one with its payload.
			Verify: &consumertest.Bounds{Events: []scenario.Fate{scenario.FateOK, scenario.FateSame}, Workers: 1}},
		{Name: "ownretry-noretry", Law: laws.HealthyApplied, Doc: "its own dead_letters table, an event parked at its first failure: a transient failure loses a healthy event",
			Consumer: ownretryConsumer(ownretry.HandleNoRetry), SQLite: ownretrySQLite,
			// One injected failure, the broker retrying four times.
			Verify: &consumertest.Bounds{Events: one, Workers: 1, Failures: 1, Policy: p4}},
	}
}

const (
	ownretrySQLite = "_txlock=immediate&_pragma=busy_timeout(5000)"
	sweeperKeys    = "SELECT idem_key FROM idempotency_keys"
	postingEffects = "SELECT idem_key, amount_cents, currency FROM postings"
)

func migrationsConsumer(d migrations.Dialect) consumertest.Consumer {
	return consumertest.Consumer{Setup: migrations.Setup(d), Handler: migrations.Handle,
		Effects: consumertest.PerEvent("SELECT event_id, amount_cents, currency FROM ledger"), Dedupe: processedEvents}
}

func ownretryConsumer(h handler.Handler) consumertest.Consumer {
	return consumertest.Consumer{Schema: ownretry.Schema, Handler: h, Effects: consumertest.PerEvent(ledgerEffects), Dedupe: processedEvents,
		DeadLetters: "SELECT event_id FROM dead_letters"}
}

func ttlConsumer(d ttl.Dialect, window string) consumertest.Consumer {
	return consumertest.Consumer{Schema: ttl.Schema(d), Handler: ttl.Handler(d, window), Effects: consumertest.PerEvent(ledgerEffects), Dedupe: processedEvents}
}

// Lookup returns the example named name.
func Lookup(name string) (Entry, bool) {
	es := append(All(), Logs()...)
	i := slices.IndexFunc(es, func(e Entry) bool { return e.Name == name })
	if i < 0 {
		return Entry{}, false
	}
	return es[i], true
}

// Names lists the examples' names.
func Names() []string {
	var out []string
	for _, e := range append(All(), Logs()...) {
		out = append(out, e.Name)
	}
	return out
}

// Logs returns the examples of consumers of a log broker (Consumer.Log),
// the correct one first. They are apart from All because what All's
// tests hold every example to does not apply to them: their SQL is
// SQLite's, and each package verifies its own (within DefaultBounds.Log).
func Logs() []Entry {
	c := func(lc *handler.LogConsumer, schema, effects string) consumertest.Consumer {
		return consumertest.Consumer{Schema: schema, Log: lc, Effects: consumertest.PerEvent(effects)}
	}
	es := []Entry{
		{Name: "logoffsets", Doc: "a log's positions kept in the effects' transaction, moved only from the value read (zombies roll back)",
			Consumer: c(&logoffsets.Consumer, logoffsets.Schema, logoffsets.Effects), Postgres: ptr(c(&logoffsets.Consumer, logoffsets.SchemaPostgres, logoffsets.Effects))},
		{Name: "logcommitfirst", Law: laws.CommitAfterApply, Doc: "a log's offset committed to the broker before the effect: a crash or a rebalance loses the record",
			Consumer: c(&logcommitfirst.Consumer, logcommitfirst.Schema, logcommitfirst.Effects)},
		{Name: "logapplythencommit", Law: laws.SingleCredit, Doc: "a log's batch applied, then its offset committed, no dedupe: a rebalance's zombie and the new owner both apply it",
			Consumer: c(&logapplythencommit.Consumer, logapplythencommit.Schema, logapplythencommit.Effects)},
		{Name: "logautocommit", Law: laws.CommitAfterApply, Doc: "a log's batch consumer left to the client's automatic commit: a batch that failed half way is committed",
			Consumer: c(&logautocommit.Consumer, logautocommit.Schema, logautocommit.Effects)},
		{Name: "logdeadletters", Doc: "a log's record parked in its own dead_letters after 3 failed fetches, the offset committed past it (DeadLetters)",
			Consumer: logDeadLetters(logdeadletters.Consumer), SQLite: ownretrySQLite},
		{Name: "logdeadletters-noretry", Law: laws.HealthyApplied, Doc: "a log's record parked in its own dead_letters at its first failure: a transient failure loses a healthy record",
			Consumer: logDeadLetters(logdeadletters.ConsumerNoRetry), SQLite: ownretrySQLite},
	}
	for i := range es {
		es[i].Consumer.Name = es[i].Name
		if es[i].Postgres != nil {
			es[i].Postgres.Name = es[i].Name
		}
	}
	return es
}

// logDeadLetters is a consumer of package logdeadletters, its own dead
// letters declared.
func logDeadLetters(lc handler.LogConsumer) consumertest.Consumer {
	return consumertest.Consumer{Schema: logdeadletters.Schema, Log: &lc, Effects: consumertest.PerEvent(logdeadletters.Effects),
		Dedupe: processedEvents, DeadLetters: logdeadletters.DeadLetters}
}

func ptr[T any](v T) *T { return &v }
