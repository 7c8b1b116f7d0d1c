package sqlstore

import "context"

// CommitPoint is a point between the statements of a commit's transaction.
type CommitPoint int

const (
	// AfterFencingCheck: the row is locked and the token checked.
	AfterFencingCheck CommitPoint = iota + 1
	// AfterLedgerInsert: the ledger rows are inserted, not yet committed.
	AfterLedgerInsert
	// AfterMark: the record is marked processed, not yet committed.
	AfterMark
)

// String names the point, for test names and messages.
func (p CommitPoint) String() string {
	switch p {
	case AfterFencingCheck:
		return "after-fencing-check"
	case AfterLedgerInsert:
		return "after-ledger-insert"
	case AfterMark:
		return "after-mark"
	}
	return "unknown"
}

type hookKey struct{}

// WithCommitHook returns a context under which a unit of work's Commit calls
// hook at each CommitPoint, on the committing goroutine. It is the fault
// injector's way into the middle of a transaction: a hook that calls the
// unit's Crash kills the worker after its writes were sent but before they
// were committed, and the database must then land none of them.
func WithCommitHook(ctx context.Context, hook func(CommitPoint)) context.Context {
	return context.WithValue(ctx, hookKey{}, hook)
}

func commitHook(ctx context.Context) func(CommitPoint) {
	h, _ := ctx.Value(hookKey{}).(func(CommitPoint))
	return h
}
