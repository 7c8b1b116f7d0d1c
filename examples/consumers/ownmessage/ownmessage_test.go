package ownmessage_test

import (
	"os"
	"strings"
	"testing"

	"github.com/idemcheck/idemcheck/consumertest"
	"github.com/idemcheck/idemcheck/consumertest/handler"
	"github.com/idemcheck/idemcheck/consumertest/laws"
	"github.com/idemcheck/idemcheck/consumertest/scenario"
	"github.com/idemcheck/idemcheck/examples/consumers/ownmessage"
)

var consumer = consumertest.Consumer{
	Name:     "ownmessage",
	Schema:   ownmessage.Schema,
	Handler:  handler.HandlerOf(ownmessage.FromHarness, ownmessage.Handle),
	Effects:  consumertest.PerEvent("SELECT message_id, amount_cents FROM payments"),
	Dedupe:   "SELECT message_id FROM processed_messages",
	EventIDs: ownmessage.EventID,
}

func TestOwnMessageIsNeverFlagged(t *testing.T) {
	consumertest.Check(t, consumer, consumertest.Checks(300))
}

func TestOwnMessageIsNeverFlaggedOnPostgres(t *testing.T) {
	dsn := os.Getenv(consumertest.PostgresEnv)
	if dsn == "" {
		t.Skipf("%s is not set: skipping the consumer on PostgreSQL", consumertest.PostgresEnv)
	}
	consumertest.Check(t, consumer, consumertest.Checks(60), consumertest.Postgres(dsn))
}

// TestOwnMessageIsVerified: an event and a poison one, whose body does not
// decode, two workers, a preemption, a crash, an injected failure and a
// duplicate.
func TestOwnMessageIsVerified(t *testing.T) {
	b := consumertest.Bounds{Events: []scenario.Fate{scenario.FateOK, scenario.FatePoison}, Workers: 2, Preemptions: 1, Crashes: 1, Failures: 1, Duplicates: 1}
	consumertest.Verify(t, consumer, b, consumertest.CorpusDir(t.TempDir()))
}

// TestTheTraceNamesTheUUIDs: the scenario's events carry the ids
// EventIDs gives, which the consumer parses: a consumer given e1, e2, ...
// would dead-letter every message.
func TestTheTraceNamesTheUUIDs(t *testing.T) {
	scenario := func() *scenario.Scenario {
		// A new one for each Replay: Replay names the events of the
		// scenario it is given in place.
		return &scenario.Scenario{Version: scenario.Version, Workers: 1, Policy: scenario.DefaultPolicy,
			Events: []scenario.Event{{ID: "e1", User: "u1", Amount: 100}, {ID: "e2", User: "u1", Poison: true}}}
	}
	res, err := consumertest.Replay(consumer, scenario())
	if err != nil {
		t.Fatal(err)
	}
	trace := res.Outcome.Trace.String()
	if res.Failed || !strings.Contains(trace, "w1 receives "+ownmessage.EventID(1)) || !strings.Contains(trace, "dead-letters "+ownmessage.EventID(2)) {
		t.Fatalf("want e1 applied and e2 dead-lettered under their UUIDs:\n%s", res.Report())
	}
	plain := consumer
	plain.EventIDs = nil
	res, err = consumertest.Replay(plain, scenario())
	if err != nil {
		t.Fatal(err)
	}
	if !res.Failed || res.Law != laws.HealthyApplied {
		t.Fatalf("with ids that are not UUIDs, want healthy-applied broken, got:\n%s", res.Report())
	}
}

func FuzzOwnMessage(f *testing.F) { consumertest.Fuzz(f, consumer) }
