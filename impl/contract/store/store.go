// Package store defines the contract of the idempotency (claim) store together
// with its unit of work and ledger. They form one contract because the
// guarantee the harness checks — the side effect and the "processed" mark land
// together or not at all, and a stale fencing token lands nothing — can only be
// given by one transaction over both.
//
// Any implementation (the in-memory reference, the SQL ones, a team's own) is
// checked through this interface.
package store

import (
	"context"
	"errors"
)

// Key identifies one operation: (tenant, consumer, idempotency key). An empty
// tenant is a valid value. The same ID under two consumers is two operations,
// so that an order projector and an email sender each process an event once.
type Key struct {
	Tenant   string `json:"tenant"`
	Consumer string `json:"consumer"`
	ID       string `json:"id"`
}

func (k Key) String() string { return k.Tenant + "/" + k.Consumer + "/" + k.ID }

// State of a claim record.
type State string

const (
	// Processing: a worker holds the claim's lease.
	Processing State = "processing"
	// Processed: the effect and the mark were committed.
	Processed State = "processed"
	// Failed: the last attempt failed; the record may be claimed again.
	Failed State = "failed"
)

// Record is the stored claim record of one Key.
type Record struct {
	Key          Key    `json:"key"`
	State        State  `json:"state"`
	StartedAtMs  int64  `json:"startedAtMs"`
	FinishedAtMs int64  `json:"finishedAtMs,omitempty"`
	Attempts     int    `json:"attempts"`
	Token        uint64 `json:"token"`
	LeaseUntilMs int64  `json:"leaseUntilMs,omitempty"`
	LastError    string `json:"lastError,omitempty"`
}

// Outcome of a claim.
type Outcome string

const (
	// Acquired: the caller holds the lease with Claim.Token.
	Acquired Outcome = "acquired"
	// AlreadyProcessed: the operation completed before; skip its effects.
	AlreadyProcessed Outcome = "processed"
	// Locked: another holder's lease is still valid; retry later.
	Locked Outcome = "locked"
)

// Claim is the answer to Store.Claim.
type Claim struct {
	Outcome Outcome `json:"outcome"`
	// Token is the fencing token of an acquired claim: strictly greater than
	// every token issued before for the same key.
	Token uint64 `json:"token,omitempty"`
	// Attempt is the record's attempt count after an acquire (1 on the first).
	Attempt int `json:"attempt,omitempty"`
	// Takeover is true when the claim was acquired by taking over an expired
	// lease of another holder.
	Takeover bool `json:"takeover,omitempty"`
	// AtMs is the store's time at which the claim was decided.
	AtMs int64 `json:"atMs"`
	// Answered is the store's own answer when its declared conventions
	// read it as Outcome instead (Conventions.Canonical): a mark-on-claim
	// store answers AlreadyProcessed for a key still in processing, which
	// a consumer that knows its conventions reads as Locked. Empty when
	// the answer is Outcome.
	Answered Outcome `json:"answered,omitempty"`
}

// Entry is one ledger row. The ledger is append-only and unique on
// (Consumer, EventID): each consumer's effects live in their own table.
type Entry struct {
	Consumer    string `json:"consumer"`
	EventID     string `json:"eventId"`
	OrderID     string `json:"orderId"`
	UserID      string `json:"userId"`
	AmountCents int64  `json:"amountCents"`
}

// CommitResult tells what a successful commit did.
type CommitResult struct {
	// Credited counts ledger entries inserted.
	Credited int `json:"credited"`
	// DuplicatesIgnored counts inserts the unique constraint turned into no-ops.
	// The constraint is defence in depth: in a correct consumer it never fires,
	// so the harness reports every firing it cannot explain.
	DuplicatesIgnored int `json:"duplicatesIgnored,omitempty"`
	// AtMs is the store's time of the commit (the record's finishedAt).
	AtMs int64 `json:"atMs"`
}

// ErrStaleToken is returned by a commit or release whose fencing token is no
// longer the record's current one. Such a call must have changed nothing.
var ErrStaleToken = errors.New("stale fencing token")

// ErrNotHeld is returned when the record is not in processing under any token
// (for example it was never claimed, or was already settled).
var ErrNotHeld = errors.New("claim not held")

// Tx is a unit of work bound to one claimed key and its fencing token. Staged
// ledger entries and the processed mark land together on Commit, after the
// fencing check, or not at all.
type Tx interface {
	// Credit stages a ledger entry.
	Credit(e Entry)
	// Commit checks the token, then applies the staged entries and marks the
	// record processed, in one atomic step.
	Commit(ctx context.Context) (CommitResult, error)
	// Rollback discards the staged work. Safe to call after Commit.
	Rollback(ctx context.Context) error
}

// Store is the claim store with its unit of work and ledger.
type Store interface {
	// Claim tries to acquire key with a lease of leaseMs by the store's time.
	Claim(ctx context.Context, key Key, leaseMs int64) (Claim, error)
	// Begin opens a unit of work for a claim held with token.
	Begin(ctx context.Context, key Key, token uint64) (Tx, error)
	// Fail records a failed attempt (state failed, lastError = reason) so the
	// key can be claimed again at once. A stale token changes nothing.
	Fail(ctx context.Context, key Key, token uint64, reason string) error
	// Get reads one record.
	Get(ctx context.Context, key Key) (Record, bool, error)
	// Cleanup deletes processed records whose finishedAt is at least
	// retentionMs before the store's own time, and returns their keys sorted.
	Cleanup(ctx context.Context, retentionMs int64) ([]Key, error)
	// Records returns every record, sorted by key.
	Records(ctx context.Context) ([]Record, error)
	// Ledger returns every ledger entry, sorted by (Consumer, EventID).
	Ledger(ctx context.Context) ([]Entry, error)
	// NowMs returns the store's own time.
	NowMs(ctx context.Context) (int64, error)
}

// Crasher is implemented by units of work that can simulate their worker
// process dying mid-transaction (a SQL store closes the connection under the
// open transaction). The runner calls Crash when a scenario crashes a worker
// holding an open unit of work; stores without it get Rollback instead.
type Crasher interface {
	Crash()
}

// Closer is implemented by stores that hold resources (connections, files).
type Closer interface {
	Close() error
}

// SplitTx is implemented by units of work that cannot commit atomically —
// the Redis set-if-absent-then-effect pattern is one: the effect and the
// processed mark are separate writes. The consumer then commits in two
// steps, effect first, so a scenario can crash a worker between the two
// writes exactly where such a process can die. Commit on a SplitTx does both.
type SplitTx interface {
	Tx
	// CommitEffect checks the token and applies the staged entries.
	CommitEffect(ctx context.Context) (CommitResult, error)
	// CommitMark marks the record processed.
	CommitMark(ctx context.Context) error
}

// Tables is statement-level access to a claim store's tables: each method is
// one statement, with no lease check, no fencing and no transaction around
// it — what consumer code written straight against a database does instead
// of the contract's guarded operations. The harness's naive-consumer mutants
// (impl/mutant) are written against it. Implementing it is optional.
type Tables interface {
	// InsertEntry inserts e into the ledger unless the unique constraint on
	// (Consumer, EventID) forbids it, and reports whether it did.
	InsertEntry(ctx context.Context, e Entry) (bool, error)
	// MarkProcessed upserts key's record as processed at the store's time.
	MarkProcessed(ctx context.Context, key Key) error
	// PutProcessing upserts key's record as a processing claim — attempts
	// plus one, a new fencing token, a lease of leaseMs from the store's
	// time — whatever the record held, and returns the token.
	PutProcessing(ctx context.Context, key Key, leaseMs int64) (uint64, error)
	// DeleteProcessedBefore deletes the processed records finished at or
	// before cutoffMs, a cutoff the caller computed, and returns their keys
	// sorted.
	DeleteProcessedBefore(ctx context.Context, cutoffMs int64) ([]Key, error)
}
