// Package producer is the producer side: an idempotency gate in front of the
// broker. A produce carrying a key whose operation is COMMITTED succeeds
// without enqueueing again; one that is PENDING is rejected; a failed produce
// records FAILED, and FAILED may be retried (FAILED → PENDING).
package producer

import (
	"errors"
	"fmt"

	"github.com/idemcheck/idemcheck/impl/broker"
)

// GateState is the state of one keyed produce operation.
type GateState string

const (
	// Pending: a produce of the key is under way.
	Pending GateState = "PENDING"
	// Committed: the key's message was enqueued.
	Committed GateState = "COMMITTED"
	// Failed: the last produce of the key failed; it may be retried.
	Failed GateState = "FAILED"
)

// ErrPending rejects a produce while another produce of the same key is under way.
var ErrPending = errors.New("produce of this key is already pending")

// Identity of a keyed produce: (tenant, topic, key).
type Identity struct {
	Tenant, Topic, Key string
}

// Gate tracks keyed produce operations.
type Gate struct {
	states  map[Identity]GateState
	missing bool // mutant: the gate is never consulted
}

// NewGate returns the reference gate.
func NewGate() *Gate { return &Gate{states: map[Identity]GateState{}} }

// NewMissingGate is a mutant: a producer with no idempotency gate, so a retry
// of a committed produce enqueues the message again.
func NewMissingGate() *Gate { return &Gate{states: map[Identity]GateState{}, missing: true} }

// Decision is the gate's answer to a produce.
type Decision string

const (
	// Proceed: the key is now PENDING; enqueue, then Commit or Fail.
	Proceed Decision = "proceed"
	// AlreadyCommitted: succeed without enqueueing.
	AlreadyCommitted Decision = "already-committed"
	// Rejected: the key is PENDING elsewhere.
	Rejected Decision = "rejected"
)

// Begin decides a produce of id and, on Proceed, marks it PENDING.
func (g *Gate) Begin(id Identity) Decision {
	if id.Key == "" || g.missing {
		return Proceed
	}
	switch g.states[id] {
	case Committed:
		return AlreadyCommitted
	case Pending:
		return Rejected
	}
	g.states[id] = Pending
	return Proceed
}

// Commit records a successful enqueue.
func (g *Gate) Commit(id Identity) {
	if id.Key != "" {
		g.states[id] = Committed
	}
}

// Fail records a failed produce; the key may be produced again.
func (g *Gate) Fail(id Identity) {
	if id.Key != "" {
		g.states[id] = Failed
	}
}

// State returns the state of id ("" if never produced).
func (g *Gate) State(id Identity) GateState { return g.states[id] }

// Result of a produce.
type Result struct {
	Decision Decision
	// Offset of the enqueued message when Decision is Proceed.
	Offset int64
}

// Producer publishes through the gate.
type Producer struct {
	Gate   *Gate
	Broker *broker.Broker
}

// Produce publishes payload to topic under (tenant, key).
func (p *Producer) Produce(topic, tenant, key string, payload []byte) (Result, error) {
	id := Identity{Tenant: tenant, Topic: topic, Key: key}
	switch d := p.Gate.Begin(id); d {
	case AlreadyCommitted:
		return Result{Decision: d}, nil
	case Rejected:
		return Result{Decision: d}, fmt.Errorf("%w: %s/%s/%s", ErrPending, tenant, topic, key)
	}
	off := p.Broker.Enqueue(topic, tenant, key, payload, broker.Produced)
	p.Gate.Commit(id)
	return Result{Decision: Proceed, Offset: off}, nil
}

// ProduceFailing is a produce whose path fails after the gate marked it
// PENDING (the broker was unreachable): nothing is enqueued and the gate
// records FAILED, so a later produce may retry.
func (p *Producer) ProduceFailing(topic, tenant, key string) (Decision, error) {
	id := Identity{Tenant: tenant, Topic: topic, Key: key}
	d := p.Gate.Begin(id)
	switch d {
	case AlreadyCommitted:
		return d, nil
	case Rejected:
		return d, fmt.Errorf("%w: %s/%s/%s", ErrPending, tenant, topic, key)
	}
	p.Gate.Fail(id)
	return d, errors.New("broker unreachable")
}

// PublishDLQ dead-letters a delivery through the gate, keyed by the message's
// (group, partition, offset), so a consumer that crashes between the DLQ
// publish and its ack and then sees the message again does not dead-letter it
// twice.
func (p *Producer) PublishDLQ(d broker.Delivery, reason string) Decision {
	m := d.Message
	id := Identity{Tenant: m.Tenant, Topic: broker.DLQTopic(m.Topic), Key: fmt.Sprintf("%s/%d/%d", m.Group, m.Partition, m.Offset)}
	dec := p.Gate.Begin(id)
	if dec != Proceed {
		return dec
	}
	p.Broker.DeadLetter(d, reason)
	p.Gate.Commit(id)
	return dec
}
