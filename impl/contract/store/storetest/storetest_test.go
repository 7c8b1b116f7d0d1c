package storetest

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/impl/contract/clock"
	"github.com/idemcheck/idemcheck/impl/contract/store"
)

// recorder is a tester that records failures instead of failing the test,
// so a check can be run against a store with a planted bug.
type recorder struct {
	mu     sync.Mutex
	failed bool
	log    []string
}

// fatal is what recorder.Fatalf panics with to stop the check, as
// t.FailNow does with runtime.Goexit.
type fatal struct{}

func (r *recorder) Helper() {}

func (r *recorder) Logf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.log = append(r.log, fmt.Sprintf(format, args...))
}

func (r *recorder) Errorf(format string, args ...any) {
	r.Logf(format, args...)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.failed = true
}

func (r *recorder) Fatalf(format string, args ...any) {
	r.Errorf(format, args...)
	panic(fatal{})
}

// runCheck runs c against a toy store built with b and returns what the
// check reported. A call blocked by the planted bug gives up after timeout.
func runCheck(c check, b bug, timeout time.Duration) (rec *recorder) {
	rec = &recorder{}
	clk := clock.NewVirtual(startMs)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	defer func() {
		if p := recover(); p != nil {
			if _, ok := p.(fatal); !ok {
				panic(p)
			}
		}
	}()
	c.run(&env{t: rec, s: newToy(b, clk), clock: clk, ctx: ctx})
	return rec
}

// killers says which checks must catch each planted bug.
var killers = map[bug][]string{
	bugAttemptFromZero:    {"FirstClaimAcquires", "AttemptsCount"},
	bugIgnoreLease:        {"ValidLeaseIsLocked", "ConcurrentClaimsOneWinner"},
	bugProcessedExpires:   {"ProcessedIsAlreadyProcessed"},
	bugLeaseEndInclusive:  {"ExpiredLeaseIsTakenOver"},
	bugNoTakeoverFlag:     {"ExpiredLeaseIsTakenOver", "ConcurrentClaimsOneWinner"},
	bugTokenPerRecord:     {"TokensIncreaseAfterCleanup"},
	bugTokenFromTime:      {"TokensStrictlyIncrease"},
	bugNoFencing:          {"StaleCommitChangesNothing", "ConcurrentCommitsAndTakeovers"},
	bugCheckAtBegin:       {"StaleCommitChangesNothing"},
	bugEffectBeforeCheck:  {"StaleCommitChangesNothing"},
	bugFinishedAtClaim:    {"CommitLandsEffectAndMark"},
	bugLeaseKeptOnCommit:  {"CommitLandsEffectAndMark"},
	bugCommitDropsColumns: {"CommitLandsEffectAndMark"},
	bugLateCommitRefused:  {"CommitAfterLeaseRanOut"},
	bugNoUnique:           {"LedgerUniquePerConsumerEvent"},
	bugUniqueOnEvent:      {"LedgerUniquePerConsumerEvent"},
	bugDuplicateAborts:    {"LedgerUniquePerConsumerEvent"},
	bugMarkCreatesRecord:  {"CommitRequiresHeldClaim"},
	bugRollbackApplies:    {"RollbackLandsNothing"},
	bugFailKeepsLease:     {"FailReleasesAtOnce"},
	bugFailDropsReason:    {"FailReleasesAtOnce"},
	bugReclaimIsTakeover:  {"FailReleasesAtOnce"},
	bugFailNoFencing:      {"FailWithStaleTokenChangesNothing"},
	bugKeyByString:        {"KeyIdentity"},
	bugKeyWithoutTenant:   {"KeyIdentity"},
	bugGetWrongRecord:     {"KeyIdentity"},
	bugCleanupExclusive:   {"CleanupByStoreTime"},
	bugCleanupAnyState:    {"CleanupByStoreTime"},
	bugCleanupUnsorted:    {"CleanupByStoreTime"},
	bugCleanupLedger:      {"CleanupByStoreTime"},
	bugRecordsByString:    {"RecordsSortedByKey"},
	bugLedgerByEvent:      {"LedgerSortedByConsumerEvent"},
	bugAttemptsOnLocked:   {"AttemptsCount", "ValidLeaseIsLocked"},
	bugNowOffByOne:        {"NowMsIsStoreTime"},
	bugBeginLocks:         {"OpenUnitsOfWorkDoNotBlock"},
	bugRacyClaim:          {"ConcurrentClaimsOneWinner"},
	bugBusyUnderLoad:      {"ConcurrentDistinctKeys"},
}

func checkNamed(t *testing.T, name string) check {
	t.Helper()
	i := slices.IndexFunc(checks, func(c check) bool { return c.name == name })
	if i < 0 {
		t.Fatalf("no check named %q", name)
	}
	return checks[i]
}

// TestToyPasses: the toy without a bug passes every check, so a failure in
// the mutant test below is the planted bug's doing, not a false alarm.
func TestToyPasses(t *testing.T) {
	Run(t, func(t *testing.T, c clock.Source) store.Store { return newToy(noBug, c) })
}

// TestEachCheckCatchesItsBug runs each check against the bugs it targets
// and fails if one goes unnoticed.
func TestEachCheckCatchesItsBug(t *testing.T) {
	bugs := slices.Sorted(maps.Keys(killers))
	for _, b := range bugs {
		for _, name := range killers[b] {
			t.Run(name+"/"+string(b), func(t *testing.T) {
				if rec := runCheck(checkNamed(t, name), b, 300*time.Millisecond); !rec.failed {
					t.Errorf("check %s passed a store with bug %q", name, b)
				} else {
					t.Logf("caught: %v", rec.log)
				}
			})
		}
	}
}

// TestEveryCheckCanFail: every check is listed as the killer of some bug,
// so none of them is a check that cannot fail.
func TestEveryCheckCanFail(t *testing.T) {
	killed := map[string]bool{}
	for _, names := range killers {
		for _, n := range names {
			killed[n] = true
		}
	}
	for _, c := range checks {
		if !killed[c.name] {
			t.Errorf("check %s catches none of the planted bugs", c.name)
		}
	}
}
