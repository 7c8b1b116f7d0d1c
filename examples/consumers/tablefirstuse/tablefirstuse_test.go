package tablefirstuse_test

import (
	"os"
	"testing"

	"github.com/idemcheck/idemcheck/consumertest"
	"github.com/idemcheck/idemcheck/consumertest/scenario"
	"github.com/idemcheck/idemcheck/examples/consumers/tablefirstuse"
	"github.com/idemcheck/idemcheck/impl/contract/handler"
)

func consumer(name string, w handler.Worker) consumertest.Consumer {
	return consumertest.Consumer{
		Name:    name,
		Schema:  tablefirstuse.Schema,
		Worker:  w,
		Effects: consumertest.PerEvent("SELECT event_id, amount_cents FROM ledger"),
	}
}

var (
	eager = consumer("tablefirstuse", tablefirstuse.NewWorker)
	lazy  = consumer("tablefirstuse-lazy", tablefirstuse.NewLazyWorker)
	one   = []scenario.Fate{scenario.FateOK}
)

func TestTablesCreatedByTheFactoryAreNeverFlagged(t *testing.T) {
	consumertest.Check(t, eager, consumertest.Checks(300))
}

func TestTablesCreatedOnFirstUseAreNeverFlagged(t *testing.T) {
	consumertest.Check(t, lazy, consumertest.Checks(300))
}

// TestTablesCreatedByTheFactoryAreVerified: each worker creates the tables
// as it starts and again after a crash; with two workers, a duplicate and
// two preemptions; with one, an injected failure too (in the factory's
// statements as well).
func TestTablesCreatedByTheFactoryAreVerified(t *testing.T) {
	for name, b := range map[string]consumertest.Bounds{
		"two workers": {Events: one, Workers: 2, Preemptions: 2, Crashes: 1, Duplicates: 1},
		"one worker":  {Events: one, Workers: 1, Crashes: 1, Failures: 1, Duplicates: 1},
	} {
		t.Run(name, func(t *testing.T) { consumertest.Verify(t, eager, b, consumertest.CorpusDir(t.TempDir())) })
	}
}

// TestTablesCreatedOnFirstUseAreVerified: the creation runs in the
// handler, so crashes and injected failures land in it too.
func TestTablesCreatedOnFirstUseAreVerified(t *testing.T) {
	for name, b := range map[string]consumertest.Bounds{
		"one worker, a crash, a failure, a duplicate": {Events: one, Workers: 1, Crashes: 1, Failures: 1, Duplicates: 1},
		"two workers, a preemption, a crash":          {Events: one, Workers: 2, Preemptions: 1, Crashes: 1, Duplicates: 1},
	} {
		t.Run(name, func(t *testing.T) { consumertest.Verify(t, lazy, b, consumertest.CorpusDir(t.TempDir())) })
	}
}

// TestOnPostgres: the inbox table a worker creates is the run's like the
// schema's, emptied between scenarios.
func TestOnPostgres(t *testing.T) {
	dsn := os.Getenv(consumertest.PostgresEnv)
	if dsn == "" {
		t.Skipf("%s is not set: skipping the consumers on PostgreSQL", consumertest.PostgresEnv)
	}
	for _, c := range []consumertest.Consumer{eager, lazy} {
		consumertest.Check(t, c, consumertest.Checks(60), consumertest.Postgres(dsn))
	}
}

// TestTheInboxIsTheDedupeRecord is skipped: the inbox table is the
// consumer's dedupe record, but the harness reads the Dedupe query before
// the workers start (the starting state), when no worker has created the
// table yet, and refuses it at once: "bad input: the dedupe query
// \"SELECT message_id FROM inbox_messages\" failed: SQL logic error: no
// such table: inbox_messages".
func TestTheInboxIsTheDedupeRecord(t *testing.T) {
	c := lazy
	c.Dedupe = "SELECT message_id FROM inbox_messages"
	consumertest.Check(t, c, consumertest.Checks(100))
}

func FuzzTableFirstUse(f *testing.F) { consumertest.Fuzz(f, lazy) }
