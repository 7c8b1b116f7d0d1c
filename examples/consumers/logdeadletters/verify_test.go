package logdeadletters_test

import (
	"slices"
	"testing"

	"github.com/idemcheck/idemcheck/consumertest"
	"github.com/idemcheck/idemcheck/consumertest/laws"
	"github.com/idemcheck/idemcheck/consumertest/scenario"
)

// fourAttempts is Check's policy under Verify: a record may be parked
// once the harness's faults failed three of its fetches. (Under
// VerifyPolicy's two attempts one failed fetch would spend them.)
var fourAttempts = func() scenario.Policy {
	p := scenario.VerifyPolicy
	p.MaxAttempts = 4
	return p
}()

// Every schedule within the default log bounds keeps the laws.
func TestVerify(t *testing.T) {
	consumertest.Verify(t, retrying, consumertest.DefaultBounds, consumertest.CorpusDir(t.TempDir()), teamSQLite)
}

// With three injected failures the consumer parks the record in some
// schedules, and healthy-applied excuses it in every one.
func TestVerifyThreeFailures(t *testing.T) {
	ok := scenario.FateOK
	res, err := consumertest.Explore(retrying, consumertest.Bounds{Events: []scenario.Fate{ok}, Workers: 1, Partitions: 1, Failures: 3, Advances: 3, Policy: fourAttempts},
		consumertest.CorpusDir(t.TempDir()), teamSQLite)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Verified {
		t.Fatalf("a record parked after three injected failures was flagged:\n%s", res.Report())
	}
	t.Log(res.Report())
}

// The model checker finds the record parked after one injected failure.
func TestVerifyCatchesNoRetry(t *testing.T) {
	res, err := consumertest.Explore(noRetry, consumertest.Bounds{Events: []scenario.Fate{scenario.FateOK}, Workers: 1, Partitions: 1, Failures: 1, Policy: fourAttempts},
		consumertest.CorpusDir(t.TempDir()), teamSQLite)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Failed || res.Law != laws.HealthyApplied || !slices.Contains(res.Outcome.Quiet.DeadLetters, "e1") {
		t.Fatalf("want healthy-applied broken by e1 parked after one failure, got:\n%s", res.Report())
	}
}
