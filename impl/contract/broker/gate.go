package broker

import "errors"

// GateState is the state of one keyed produce operation.
type GateState string

// The states of a keyed produce.
const (
	// GatePending: a produce of the key is under way.
	GatePending GateState = "PENDING"
	// GateCommitted: the key's message was enqueued.
	GateCommitted GateState = "COMMITTED"
	// GateFailed: the last produce of the key failed; it may be retried.
	GateFailed GateState = "FAILED"
)

// ErrPending rejects a produce while another produce of the same key is under way.
var ErrPending = errors.New("produce of this key is already pending")

// Identity of a keyed produce: (tenant, topic, key).
type Identity struct {
	Tenant, Topic, Key string
}

// Decision is the gate's answer to a produce.
type Decision string

// The gate's answers.
const (
	// Proceed: the key is now PENDING; enqueue, then Commit or Fail.
	Proceed Decision = "proceed"
	// AlreadyCommitted: succeed without enqueueing.
	AlreadyCommitted Decision = "already-committed"
	// Rejected: the key is PENDING elsewhere.
	Rejected Decision = "rejected"
)

// Gate is the producer-side idempotency gate: a produce carrying a key whose
// operation is COMMITTED succeeds without enqueueing again; one that is
// PENDING is rejected; a failed produce records FAILED, and FAILED may be
// retried (FAILED → PENDING). An empty key means no idempotency.
type Gate interface {
	// Begin decides a produce of id and, on Proceed, marks it PENDING.
	Begin(id Identity) Decision
	// Commit records a successful enqueue.
	Commit(id Identity)
	// Fail records a failed produce; the key may be produced again.
	Fail(id Identity)
	// State returns the state of id ("" if never produced).
	State(id Identity) GateState
}
