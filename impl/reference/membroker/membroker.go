// Package membroker is the reference at-least-once broker, in memory: every
// consumer group gets every message; a delivery not acked is redelivered
// (after a nack, with exponential capped backoff; after an ack timeout, at
// once); attempts count deliveries; a message that reaches max_attempts goes
// to the DLQ instead of being delivered again. Messages may be duplicated and
// delivered in any order: the schedule picks which eligible message a worker
// gets.
//
// The broker is deterministic: it tells time by a virtual clock, and offsets
// and delivery ids come from counters. It implements impl/contract/broker.
package membroker

import (
	"fmt"
	"maps"
	"slices"

	"github.com/idemcheck/idemcheck/impl/contract/broker"
	"github.com/idemcheck/idemcheck/impl/contract/clock"
)

// The contract's types, under the names this package's code uses.
type (
	Policy       = broker.Policy
	Message      = broker.Message
	Delivery     = broker.Delivery
	DLQEntry     = broker.DLQEntry
	MessageState = broker.MessageState
	Origin       = broker.Origin
	Status       = broker.Status
)

type entry struct {
	msg          Message
	status       Status
	eligibleAtMs int64
	deliveredAt  int64
	lastDelivery int64
}

// Broker is the at-least-once broker. It is not safe for concurrent use: the
// runner drives it from one goroutine.
type Broker struct {
	clock      clock.Source
	policy     Policy
	groups     []string
	queues     map[string][]*entry // group -> messages in offset order
	nextOffset map[string]int64    // topic -> next offset
	nextID     int64
	dlq        []DLQEntry
}

var _ broker.Broker = (*Broker)(nil)

// New returns a broker over the given consumer groups.
func New(c clock.Source, p Policy, groups []string) *Broker {
	b := &Broker{clock: c, policy: p, groups: slices.Clone(groups), queues: map[string][]*entry{}, nextOffset: map[string]int64{}}
	return b
}

// Policy returns the broker's retry policy.
func (b *Broker) Policy() Policy { return b.policy }

// Enqueue appends a message to topic (partition 0) for every group and
// returns its offset. It does not consult any idempotency gate: that is the
// producer's job.
func (b *Broker) Enqueue(topic, tenant, key string, payload []byte, origin Origin) int64 {
	off := b.nextOffset[topic]
	b.nextOffset[topic] = off + 1
	now := b.clock.NowMs()
	for _, g := range b.groups {
		m := Message{Topic: topic, Offset: off, Group: g, Tenant: tenant, Key: key, Payload: slices.Clone(payload), Origin: origin}
		b.queues[g] = append(b.queues[g], &entry{msg: m, status: broker.Pending, eligibleAtMs: now})
	}
	return off
}

// Duplicate enqueues copies more messages carrying the same tenant, key and
// payload as the message at offset: the at-least-once broker's duplicates.
func (b *Broker) Duplicate(topic string, offset int64, copies int) ([]int64, error) {
	src := b.find(b.groups[0], topic, offset)
	if src == nil {
		return nil, fmt.Errorf("duplicate: no message at %s/%d", topic, offset)
	}
	var offs []int64
	for range copies {
		offs = append(offs, b.Enqueue(topic, src.msg.Tenant, src.msg.Key, src.msg.Payload, broker.Duplicated))
	}
	return offs, nil
}

// Replay enqueues again every message ever produced or duplicated on topic,
// as an operator rewinding the stream does.
func (b *Broker) Replay(topic string) []int64 {
	var srcs []Message
	for _, e := range b.queues[b.groups[0]] {
		if e.msg.Topic == topic && e.msg.Origin != broker.Replayed {
			srcs = append(srcs, e.msg)
		}
	}
	var offs []int64
	for _, m := range srcs {
		offs = append(offs, b.Enqueue(topic, m.Tenant, m.Key, m.Payload, broker.Replayed))
	}
	return offs
}

func (b *Broker) find(group, topic string, offset int64) *entry {
	for _, e := range b.queues[group] {
		if e.msg.Topic == topic && e.msg.Offset == offset {
			return e
		}
	}
	return nil
}

// Eligible returns the messages group could be handed now, in offset order.
func (b *Broker) Eligible(group string) []Message {
	b.Tick()
	now := b.clock.NowMs()
	var out []Message
	for _, e := range b.queues[group] {
		if e.status == broker.Pending && e.eligibleAtMs <= now {
			out = append(out, e.msg)
		}
	}
	return out
}

// Deliver hands the pick-th eligible message (modulo their number) of group
// to a consumer. It reports false when nothing is eligible.
func (b *Broker) Deliver(group string, pick int) (Delivery, bool) {
	b.Tick()
	now := b.clock.NowMs()
	var eligible []*entry
	for _, e := range b.queues[group] {
		if e.status == broker.Pending && e.eligibleAtMs <= now {
			eligible = append(eligible, e)
		}
	}
	if len(eligible) == 0 {
		return Delivery{}, false
	}
	e := eligible[pick%len(eligible)]
	e.msg.Attempts++
	e.status = broker.Inflight
	e.deliveredAt = now
	b.nextID++
	e.lastDelivery = b.nextID
	return Delivery{ID: b.nextID, Message: e.msg}, true
}

func (b *Broker) byDelivery(id int64) *entry {
	for _, g := range b.groups {
		for _, e := range b.queues[g] {
			if e.lastDelivery == id {
				return e
			}
		}
	}
	return nil
}

// ownerOf finds the message a delivery id was for, even if it was since redelivered.
func (b *Broker) ownerOf(d Delivery) *entry {
	return b.find(d.Message.Group, d.Message.Topic, d.Message.Offset)
}

// Ack settles the delivered message. Acking any delivery of a message that
// is not yet settled settles it; acking a settled one is a no-op.
func (b *Broker) Ack(d Delivery) {
	e := b.ownerOf(d)
	if e == nil || e.status == broker.Acked || e.status == broker.Dead {
		return
	}
	e.status = broker.Acked
}

// Nack records reason as the message's last error and makes it eligible
// again after the backoff, or routes it to the DLQ once it has had
// max_attempts deliveries. A nack of a superseded delivery is ignored.
func (b *Broker) Nack(d Delivery, reason string) {
	e := b.byDelivery(d.ID)
	if e == nil || e.status != broker.Inflight {
		return
	}
	e.msg.LastError = reason
	b.retryOrDead(e, b.policy.Backoff(e.msg.Attempts))
}

func (b *Broker) exhausted(e *entry) bool {
	return e.msg.Attempts >= b.policy.MaxAttempts
}

func (b *Broker) retryOrDead(e *entry, delay int64) {
	if b.exhausted(e) {
		e.status = broker.Dead
		b.addDLQ(b.dlqEntry(e.msg, e.msg.LastError, false))
		return
	}
	e.status = broker.Pending
	e.eligibleAtMs = b.clock.NowMs() + delay
}

func (b *Broker) dlqEntry(m Message, lastError string, poison bool) DLQEntry {
	d := DLQEntry{Topic: m.Topic, Partition: m.Partition, Offset: m.Offset, Group: m.Group,
		Attempts: m.Attempts, LastError: lastError, Tenant: m.Tenant, Key: m.Key, Poison: poison}
	return d
}

// Tick redelivers every inflight message whose ack timeout has passed
// (last error "ack_timeout"), or routes it to the DLQ if its attempts are
// spent. Every broker call ticks first; the runner also ticks after moving time.
func (b *Broker) Tick() {
	now := b.clock.NowMs()
	for _, g := range b.groups {
		for _, e := range b.queues[g] {
			if e.status == broker.Inflight && now >= e.deliveredAt+b.policy.AckTimeoutMs {
				e.msg.LastError = "ack_timeout"
				b.retryOrDead(e, 0)
			}
		}
	}
}

// DeadLetter publishes a delivered message to the DLQ for a non-retryable
// failure, carrying the attempts of that delivery. A consumer calls it for
// poison messages and then acks; it publishes through the producer gate (see
// producer.PublishDLQ) so a crash between the two cannot publish twice.
func (b *Broker) DeadLetter(d Delivery, reason string) {
	b.addDLQ(b.dlqEntry(d.Message, reason, true))
}

// addDLQ appends an entry unless the message is already dead-lettered. The
// DLQ is keyed by the message's identity (group, topic, partition, offset):
// the broker's own routing and a consumer's poison publish can both reach
// it — a slow worker may dead-letter a message whose attempts another
// worker's nack just exhausted — and the message must appear once.
func (b *Broker) addDLQ(d DLQEntry) {
	for _, o := range b.dlq {
		if o.Group == d.Group && o.Topic == d.Topic && o.Partition == d.Partition && o.Offset == d.Offset {
			return
		}
	}
	b.dlq = append(b.dlq, d)
}

// DLQ returns the dead-letter entries in the order they arrived.
func (b *Broker) DLQ() []DLQEntry { return slices.Clone(b.dlq) }

// Messages returns every message of every group, by group then offset.
func (b *Broker) Messages() []MessageState {
	n := 0
	for _, g := range b.groups {
		n += len(b.queues[g])
	}
	if n == 0 {
		return nil
	}
	out := make([]MessageState, 0, n)
	for _, g := range b.groups {
		for _, e := range b.queues[g] {
			out = append(out, MessageState{Message: e.msg, Status: e.status})
		}
	}
	return out
}

// Clone returns an independent copy of the broker over the clock c, for a
// search that forks a run.
func (b *Broker) Clone(c clock.Source) *Broker {
	out := &Broker{clock: c, policy: b.policy, groups: b.groups, queues: make(map[string][]*entry, len(b.queues)),
		nextOffset: maps.Clone(b.nextOffset), nextID: b.nextID, dlq: slices.Clone(b.dlq)}
	for g, q := range b.queues {
		cp := make([]*entry, len(q), len(q)+2)
		for i, e := range q {
			ce := *e
			cp[i] = &ce
		}
		out.queues[g] = cp
	}
	return out
}

// EachMessage calls f with every message of every group, by group then
// offset, with its status and its timers: the time it becomes eligible
// (pending), the time it was last delivered (in flight), and the id of its
// last delivery. It allocates nothing: a model checker fingerprints the
// broker's whole state through it.
func (b *Broker) EachMessage(f func(m *Message, status Status, eligibleAtMs, deliveredAtMs, lastDelivery int64)) {
	for _, g := range b.groups {
		for _, e := range b.queues[g] {
			f(&e.msg, e.status, e.eligibleAtMs, e.deliveredAt, e.lastDelivery)
		}
	}
}

// EachDLQ calls f with every dead-letter entry, in arrival order, without
// copying them.
func (b *Broker) EachDLQ(f func(d *DLQEntry)) {
	for i := range b.dlq {
		f(&b.dlq[i])
	}
}

// Quiet reports whether no message is pending or in flight; otherwise it
// returns the earliest time at which something becomes deliverable (an
// eligible time or an ack timeout).
func (b *Broker) Quiet() (quiet bool, nextMs int64) {
	next := int64(-1)
	for _, g := range b.groups {
		for _, e := range b.queues[g] {
			var t int64
			switch e.status {
			case broker.Pending:
				t = e.eligibleAtMs
			case broker.Inflight:
				t = e.deliveredAt + b.policy.AckTimeoutMs
			default:
				continue
			}
			if next < 0 || t < next {
				next = t
			}
		}
	}
	return next < 0, next
}
