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

	"github.com/idemcheck/idemcheck/impl/adapter/synctime"
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
	{"CommitAfterLeaseRanOut", checkCommitAfterLeaseRanOut},
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

// Factory is what Run checks: a constructor that builds a fresh store over
// the clock a rule controls, or a store library that reads time.Now and
// takes no clock (synctime.Library).
type Factory interface {
	func(t *testing.T, c clock.Source) store.Store | synctime.Library
}

// Run runs the conformance suite: one subtest per rule, each against a fresh
// store that newStore builds over the clock the subtest controls. The clock
// is the store's time: Claim, Commit and Cleanup must read it, and nothing
// else. newStore should register any cleanup (Close, dropping a schema) with
// t.Cleanup, as it would for t.TempDir.
//
// A store library that reads time.Now instead of a clock is passed as a
// synctime.Library; Run then plays each rule as RunTimeNow does, in a
// testing/synctest bubble of its own.
//
// A store whose conventions differ from the reference store's passes them
// as conv (store.Conventions): each rule then expects what the declared
// convention promises. An unknown convention fails the test at once.
func Run[F Factory](t *testing.T, newStore F, conv ...store.Conventions) {
	t.Helper()
	switch f := any(newStore).(type) {
	case synctime.Library:
		RunTimeNow(t, f, conv...)
	case func(t *testing.T, c clock.Source) store.Store:
		runClocked(t, f, conv)
	}
}

func runClocked(t *testing.T, newStore func(t *testing.T, c clock.Source) store.Store, conv []store.Conventions) {
	t.Helper()
	cv := conventionsOf(t, conv)
	for _, c := range checks {
		t.Run(c.name, func(t *testing.T) {
			clk := clock.NewVirtual(startMs)
			runCheckOn(t, c, newStore(t, clk), clk, cv)
		})
	}
}

// RunTimeNow (what Run does with a synctime.Library) runs the suite against a store library that reads time.Now
// and takes no clock (synctime.Library): each rule plays in a
// testing/synctest bubble of its own, whose clock the library's wrapper
// (synctime.Store) keeps at the rule's clock, so every time a rule asserts
// is still exact, and the library's own timers and tickers move with it.
// The suite closes each rule's store (store.Closer) at the end of the rule;
// a goroutine the library leaves running after that fails the rule as a
// leak, unless lib.Lingering says why it may. conv is as for Run.
//
//	storetest.RunTimeNow(t, synctime.Library{Open: func() (store.Store, error) { return mylib.New(), nil }})
func RunTimeNow(t *testing.T, lib synctime.Library, conv ...store.Conventions) {
	t.Helper()
	cv := conventionsOf(t, conv)
	if err := lib.Validate(); err != nil {
		t.Fatalf("storetest: %v", err)
	}
	open := lib.Store()
	for _, c := range checks {
		t.Run(c.name, func(t *testing.T) {
			leak, err := synctime.Test(t, func(t *testing.T) {
				clk := clock.NewVirtual(startMs)
				s, err := open(clk)
				if err != nil {
					t.Fatalf("storetest: opening the store: %v", err)
				}
				if cl, ok := s.(store.Closer); ok {
					t.Cleanup(func() {
						if err := cl.Close(); err != nil {
							t.Errorf("storetest: closing the store: %v", err)
						}
					})
				}
				runCheckOn(t, c, s, clk, cv)
			})
			switch {
			case err != nil:
				t.Fatalf("storetest: %v", err)
			case leak != nil && lib.Lingering == "":
				t.Errorf("storetest: %v", leak)
			case leak != nil:
				t.Logf("storetest: %d goroutine(s) left running, tolerated: %s", leak.Goroutines, lib.Lingering)
			}
		})
	}
}

func conventionsOf(t *testing.T, conv []store.Conventions) store.Conventions {
	t.Helper()
	var cv store.Conventions
	if len(conv) > 0 {
		cv = conv[0]
	}
	if err := cv.Validate(); err != nil {
		t.Fatalf("storetest: %v", err)
	}
	return cv
}

// runCheckOn runs rule c against s, whose time is clk.
func runCheckOn(t *testing.T, c check, s store.Store, clk *clock.Virtual, cv store.Conventions) {
	ctx, cancel := context.WithTimeout(t.Context(), blockTimeout)
	defer cancel()
	c.run(&env{t: t, s: s, clock: clk, ctx: ctx, conv: cv})
}
