package linearizability

import (
	"math"

	"github.com/idemcheck/idemcheck/impl/contract/store"
)

// Kind names an operation of the claim store.
type Kind uint8

const (
	// Claim is Store.Claim with a lease.
	Claim Kind = iota + 1
	// Commit is Store.Begin, at most one Tx.Credit, then Tx.Commit, with a
	// fencing token: one operation, because the unit of work lands in one
	// atomic step or not at all.
	Commit
	// Fail is Store.Fail with a token: the release after a failed attempt.
	Fail
	// Read is Store.Get.
	Read
)

// String names the operation as the visualization shows it.
func (k Kind) String() string {
	switch k {
	case Claim:
		return "claim"
	case Commit:
		return "commit"
	case Fail:
		return "fail"
	case Read:
		return "read"
	}
	return "unknown-op"
}

// Input is an operation's call: what was asked of the store.
type Input struct {
	Kind Kind
	Key  store.Key
	// LeaseMs is the lease a Claim asks for.
	LeaseMs int64
	// Token is the fencing token a Commit or Fail carries.
	Token uint64
	// Credit is set when a Commit stages one ledger entry for the key's event.
	Credit bool
}

// Answer is how the store answered a Commit or a Fail.
type Answer uint8

const (
	// OK: the commit or fail took effect.
	OK Answer = iota + 1
	// Stale: rejected with store.ErrStaleToken.
	Stale
	// NotHeld: rejected with store.ErrNotHeld.
	NotHeld
)

// String names the answer as the visualization shows it.
func (a Answer) String() string {
	switch a {
	case OK:
		return "ok"
	case Stale:
		return "stale"
	case NotHeld:
		return "not-held"
	}
	return "no-answer"
}

// Output is an operation's return: what the store answered.
type Output struct {
	// Ambiguous is set when the operation erred or timed out: it may or may
	// not have taken effect, and the model accepts any outcome for it. The
	// other fields are then unset.
	Ambiguous bool
	// Err is the error of an ambiguous operation, for people only.
	Err string
	// Claim is a Claim's answer.
	Claim store.Claim
	// Answer is a Commit's or Fail's answer.
	Answer Answer
	// Commit is the result of a Commit answered OK.
	Commit store.CommitResult
	// Found and Record are a Read's answer.
	Found  bool
	Record store.Record
}

// Never is the return stamp of an ambiguous operation: as far as the history
// knows it never returned, so it may take effect at any point after its call.
const Never int64 = math.MaxInt64

// Op is one operation of a history: a client's call, the store's answer, and
// the stamps of the call and the return from the recorder's monotonic counter.
type Op struct {
	// Client is the client that issued the operation. A worker whose
	// operation was ambiguous continues as a new client, as a process that
	// gave up on a call and restarted would.
	Client int
	Input  Input
	Output Output
	Call   int64
	// Return is Never for an ambiguous operation.
	Return int64
}
