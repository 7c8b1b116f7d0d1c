package storetest

import (
	"sync"
	"time"
)

// bug names a defect the toy store can be built with. Each is a realistic
// mistake in a claim store; the self-test requires that a named check
// catches it.
type bug string

const (
	noBug                 bug = ""
	bugAttemptFromZero    bug = "attempt counted from zero"
	bugIgnoreLease        bug = "valid lease ignored"
	bugProcessedExpires   bug = "processed record treated as an expired lease"
	bugLeaseEndInclusive  bug = "lease still valid at its end"
	bugNoTakeoverFlag     bug = "takeover not flagged"
	bugTokenPerRecord     bug = "token counter kept in the record"
	bugTokenFromTime      bug = "token taken from the clock"
	bugNoFencing          bug = "commit without the fencing check"
	bugCheckAtBegin       bug = "fencing check at Begin"
	bugEffectBeforeCheck  bug = "ledger insert before the fencing check"
	bugFinishedAtClaim    bug = "finishedAt taken from the claim"
	bugLeaseKeptOnCommit  bug = "lease kept on a processed record"
	bugNoUnique           bug = "ledger without a unique constraint"
	bugUniqueOnEvent      bug = "ledger unique on the event alone"
	bugDuplicateAborts    bug = "a duplicate insert aborts the commit"
	bugMarkCreatesRecord  bug = "mark creates a missing record"
	bugRollbackApplies    bug = "rollback applies the staged entries"
	bugFailKeepsLease     bug = "fail leaves the record in processing"
	bugFailNoFencing      bug = "fail without the fencing check"
	bugKeyByString        bug = "records keyed by Key.String"
	bugKeyWithoutTenant   bug = "tenant left out of the key"
	bugCleanupExclusive   bug = "cleanup cutoff exclusive"
	bugCleanupAnyState    bug = "cleanup deletes unsettled records"
	bugCleanupUnsorted    bug = "cleanup answer unsorted"
	bugCleanupLedger      bug = "cleanup deletes ledger entries"
	bugRecordsByString    bug = "records sorted by Key.String"
	bugLedgerByEvent      bug = "ledger sorted by event alone"
	bugAttemptsOnLocked   bug = "attempts bumped by a locked claim"
	bugNowOffByOne        bug = "NowMs off the store's clock"
	bugBeginLocks         bug = "Begin takes the store's lock"
	bugRacyClaim          bug = "claim is a separate check and act"
	bugBusyUnderLoad      bug = "overlapping calls fail"
	bugReclaimIsTakeover  bug = "reclaim after fail flagged as takeover"
	bugFailDropsReason    bug = "fail drops the reason"
	bugGetWrongRecord     bug = "Get ignores the consumer"
	bugCommitDropsColumns bug = "ledger drops a column"
	bugLateCommitRefused  bug = "a late commit refused though nobody took over"
)

// rendezvous lets a call wait until another call arrives, so a race the bug
// allows happens every time the check overlaps calls rather than by chance.
type rendezvous struct {
	mu      sync.Mutex
	waiting chan struct{}
}

// meet waits up to a second for another caller; it reports whether one came.
func (r *rendezvous) meet() bool {
	r.mu.Lock()
	if r.waiting != nil {
		close(r.waiting)
		r.waiting = nil
		r.mu.Unlock()
		return true
	}
	ch := make(chan struct{})
	r.waiting = ch
	r.mu.Unlock()
	select {
	case <-ch:
		return true
	case <-time.After(time.Second):
		r.mu.Lock()
		defer r.mu.Unlock()
		if r.waiting == ch {
			r.waiting = nil
			return false
		}
		return true
	}
}
