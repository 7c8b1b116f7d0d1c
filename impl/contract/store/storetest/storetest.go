// Package storetest is a conformance suite for the store contract
// (github.com/idemcheck/idemcheck/impl/contract/store), in the style of
// testing/fstest.TestFS: an implementation proves it keeps the contract's
// rules by calling Run from its own tests.
//
//	func TestConformance(t *testing.T) {
//		storetest.Run(t, func(t *testing.T, c clock.Source) store.Store {
//			return mystore.New(c)
//		})
//	}
//
// Every subtest gets a fresh store over a fresh virtual clock that the suite
// alone moves, so every time the suite asserts is exact. Each check targets a
// named bug; the package's own tests run every check against a store with
// that bug planted and fail if the check does not catch it.
package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/impl/contract/clock"
	"github.com/idemcheck/idemcheck/impl/contract/store"
)

// Times and durations the checks use, in milliseconds. The start is a
// realistic epoch time so a store that truncates to 32 bits or confuses 0
// with "unset" shows.
const (
	startMs     = 1_700_000_000_000
	leaseMs     = 1_000
	retentionMs = 60_000
)

// blockTimeout bounds each check's store calls. A call that waits on a lock
// held by an open unit of work would hang the single-goroutine runner for
// ever; here it fails the check instead.
const blockTimeout = 20 * time.Second

// tester is the part of *testing.T the checks use. The package's own tests
// substitute a recorder, so they can run a check against a broken store and
// see it fail without failing themselves.
type tester interface {
	Helper()
	Logf(format string, args ...any)
	Errorf(format string, args ...any)
	Fatalf(format string, args ...any)
}

// check is one rule of the contract: a name (the subtest's) and the function
// that tests it against a fresh store.
type check struct {
	name string
	run  func(e *env)
}

// checks lists every rule, in the order Run runs them.
var checks = []check{
	{"FirstClaimAcquires", checkFirstClaimAcquires},
	{"ProcessedIsAlreadyProcessed", checkProcessedIsAlreadyProcessed},
	{"ValidLeaseIsLocked", checkValidLeaseIsLocked},
	{"ExpiredLeaseIsTakenOver", checkExpiredLeaseIsTakenOver},
	{"TokensStrictlyIncrease", checkTokensStrictlyIncrease},
	{"TokensIncreaseAfterCleanup", checkTokensIncreaseAfterCleanup},
	{"AttemptsCount", checkAttemptsCount},
	{"NowMsIsStoreTime", checkNowMsIsStoreTime},
	{"CommitLandsEffectAndMark", checkCommitLandsEffectAndMark},
	{"StaleCommitChangesNothing", checkStaleCommitChangesNothing},
	{"CommitRequiresHeldClaim", checkCommitRequiresHeldClaim},
	{"LedgerUniquePerConsumerEvent", checkLedgerUniquePerConsumerEvent},
	{"RollbackLandsNothing", checkRollbackLandsNothing},
	{"FailReleasesAtOnce", checkFailReleasesAtOnce},
	{"FailWithStaleTokenChangesNothing", checkFailWithStaleTokenChangesNothing},
	{"KeyIdentity", checkKeyIdentity},
	{"CleanupByStoreTime", checkCleanupByStoreTime},
	{"RecordsSortedByKey", checkRecordsSortedByKey},
	{"LedgerSortedByConsumerEvent", checkLedgerSortedByConsumerEvent},
	{"OpenUnitsOfWorkDoNotBlock", checkOpenUnitsOfWorkDoNotBlock},
	{"ConcurrentClaimsOneWinner", checkConcurrentClaimsOneWinner},
	{"ConcurrentCommitsAndTakeovers", checkConcurrentCommitsAndTakeovers},
	{"ConcurrentDistinctKeys", checkConcurrentDistinctKeys},
}

// Run runs the conformance suite: one subtest per rule, each against a fresh
// store that newStore builds over the clock the subtest controls. The clock
// is the store's time: Claim, Commit and Cleanup must read it, and nothing
// else. newStore should register any cleanup (Close, dropping a schema) with
// t.Cleanup, as it would for t.TempDir.
//
// A store whose conventions differ from the reference store's passes them
// as conv (store.Conventions): each rule then expects what the declared
// convention promises. An unknown convention fails the test at once.
func Run(t *testing.T, newStore func(t *testing.T, c clock.Source) store.Store, conv ...store.Conventions) {
	t.Helper()
	var cv store.Conventions
	if len(conv) > 0 {
		cv = conv[0]
	}
	if err := cv.Validate(); err != nil {
		t.Fatalf("storetest: %v", err)
	}
	for _, c := range checks {
		t.Run(c.name, func(t *testing.T) {
			clk := clock.NewVirtual(startMs)
			s := newStore(t, clk)
			ctx, cancel := context.WithTimeout(t.Context(), blockTimeout)
			defer cancel()
			c.run(&env{t: t, s: s, clock: clk, ctx: ctx, conv: cv})
		})
	}
}
