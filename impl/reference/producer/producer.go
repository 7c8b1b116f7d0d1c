// Package producer is the reference producer side: an idempotency gate in
// front of the broker (impl/contract/broker.Gate). A produce carrying a key
// whose operation is COMMITTED succeeds without enqueueing again; one that is
// PENDING is rejected; a failed produce records FAILED, and FAILED may be
// retried (FAILED → PENDING).
package producer

import (
	"errors"
	"fmt"
	"maps"

	"github.com/idemcheck/idemcheck/impl/contract/broker"
)

// Gate is the reference gate: the state of every keyed produce, in memory.
type Gate struct {
	states map[broker.Identity]broker.GateState
}

var _ broker.Gate = (*Gate)(nil)

// NewGate returns the reference gate.
func NewGate() *Gate { return &Gate{states: map[broker.Identity]broker.GateState{}} }

// Begin implements broker.Gate.
func (g *Gate) Begin(id broker.Identity) broker.Decision {
	if id.Key == "" {
		return broker.Proceed
	}
	switch g.states[id] {
	case broker.GateCommitted:
		return broker.AlreadyCommitted
	case broker.GatePending:
		return broker.Rejected
	}
	g.states[id] = broker.GatePending
	return broker.Proceed
}

// Commit implements broker.Gate.
func (g *Gate) Commit(id broker.Identity) {
	if id.Key != "" {
		g.states[id] = broker.GateCommitted
	}
}

// Fail implements broker.Gate.
func (g *Gate) Fail(id broker.Identity) {
	if id.Key != "" {
		g.states[id] = broker.GateFailed
	}
}

// Clone returns an independent copy of the gate, for a search that forks a
// run.
func (g *Gate) Clone() *Gate { return &Gate{states: maps.Clone(g.states)} }

// State implements broker.Gate.
func (g *Gate) State(id broker.Identity) broker.GateState { return g.states[id] }

// Result of a produce.
type Result struct {
	Decision broker.Decision
	// Offset of the enqueued message when Decision is Proceed.
	Offset int64
}

// Producer publishes through the gate.
type Producer struct {
	Gate   broker.Gate
	Broker broker.Broker
}

// Produce publishes payload to topic under (tenant, key).
func (p *Producer) Produce(topic, tenant, key string, payload []byte) (Result, error) {
	id := broker.Identity{Tenant: tenant, Topic: topic, Key: key}
	switch d := p.Gate.Begin(id); d {
	case broker.AlreadyCommitted:
		return Result{Decision: d}, nil
	case broker.Rejected:
		return Result{Decision: d}, fmt.Errorf("%w: %s/%s/%s", broker.ErrPending, tenant, topic, key)
	}
	off := p.Broker.Enqueue(topic, tenant, key, payload, broker.Produced)
	p.Gate.Commit(id)
	return Result{Decision: broker.Proceed, Offset: off}, nil
}

// ProduceFailing is a produce whose path fails after the gate marked it
// PENDING (the broker was unreachable): nothing is enqueued and the gate
// records FAILED, so a later produce may retry.
func (p *Producer) ProduceFailing(topic, tenant, key string) (broker.Decision, error) {
	id := broker.Identity{Tenant: tenant, Topic: topic, Key: key}
	d := p.Gate.Begin(id)
	switch d {
	case broker.AlreadyCommitted:
		return d, nil
	case broker.Rejected:
		return d, fmt.Errorf("%w: %s/%s/%s", broker.ErrPending, tenant, topic, key)
	}
	p.Gate.Fail(id)
	return d, errors.New("broker unreachable")
}

// PublishDLQ dead-letters a delivery through the gate, keyed by the message's
// (group, partition, offset), so a consumer that crashes between the DLQ
// publish and its ack and then sees the message again does not dead-letter it
// twice.
func (p *Producer) PublishDLQ(d broker.Delivery, reason string) broker.Decision {
	m := d.Message
	id := broker.Identity{Tenant: m.Tenant, Topic: broker.DLQTopic(m.Topic), Key: fmt.Sprintf("%s/%d/%d", m.Group, m.Partition, m.Offset)}
	dec := p.Gate.Begin(id)
	if dec != broker.Proceed {
		return dec
	}
	p.Broker.DeadLetter(d, reason)
	p.Gate.Commit(id)
	return dec
}
