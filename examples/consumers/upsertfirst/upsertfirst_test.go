package upsertfirst_test

import (
	"os"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/consumertest"
	"github.com/idemcheck/idemcheck/consumertest/scenario"
	"github.com/idemcheck/idemcheck/examples/consumers/upsertfirst"
	"github.com/idemcheck/idemcheck/impl/contract/handler"
)

func consumer(name string, h handler.Func) consumertest.Consumer {
	return consumertest.Consumer{
		Name:    name,
		Schema:  upsertfirst.Schema,
		Handler: h,
		Effects: consumertest.PerEvent("SELECT event_id, amount_cents FROM ledger"),
		Dedupe:  "SELECT event_id FROM processed_events",
	}
}

var (
	onConflict = consumer("upsertfirst", upsertfirst.Handle)
	orIgnore   = consumer("upsertfirst-or-ignore", upsertfirst.HandleOrIgnore)
)

func TestOnConflictDoNothingIsNeverFlagged(t *testing.T) {
	consumertest.Check(t, onConflict, consumertest.Checks(300))
}

func TestInsertOrIgnoreIsNeverFlagged(t *testing.T) {
	consumertest.Check(t, orIgnore, consumertest.Checks(300))
}

func TestOnConflictDoNothingIsNeverFlaggedOnPostgres(t *testing.T) {
	dsn := os.Getenv(consumertest.PostgresEnv)
	if dsn == "" {
		t.Skipf("%s is not set: skipping the upsert-first consumer on PostgreSQL", consumertest.PostgresEnv)
	}
	consumertest.Check(t, onConflict, consumertest.Checks(60), consumertest.Postgres(dsn))
}

// TestTheUpsertIsVerified: every schedule of one event, its duplicate and
// two workers, with two preemptions, a crash and an injected failure.
// RowsAffected of an ignored insert (0) and of a claim (1) must be the
// same in every replay of a schedule, or the search stops with "not
// deterministic".
func TestTheUpsertIsVerified(t *testing.T) {
	b := consumertest.Bounds{Events: []scenario.Fate{scenario.FateOK}, Workers: 2, Preemptions: 2, Crashes: 1, Failures: 1, Duplicates: 1}
	for _, c := range []consumertest.Consumer{onConflict, orIgnore} {
		t.Run(c.Name, func(t *testing.T) {
			consumertest.Verify(t, c, b, consumertest.CorpusDir(t.TempDir()), consumertest.VerifyWith(consumertest.VerifyOptions{Time: 2 * time.Minute}))
		})
	}
}

// FuzzUpsertFirst fuzzes the consumer: go test plays the seed inputs.
func FuzzUpsertFirst(f *testing.F) { consumertest.Fuzz(f, onConflict) }
