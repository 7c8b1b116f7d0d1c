package mutant

import (
	"math"

	"github.com/idemcheck/idemcheck/impl/contract/broker"
	"github.com/idemcheck/idemcheck/impl/contract/clock"
	"github.com/idemcheck/idemcheck/impl/reference/membroker"
)

// policyBroker is the reference broker run under another retry policy than
// the one it reports: the shape of a broker whose retry bound is wrong.
type policyBroker struct {
	*membroker.Broker
	reported broker.Policy
}

func (b *policyBroker) Policy() broker.Policy { return b.reported }

// NewMaxAttemptsOffByOne is a broker that compares attempts > max_attempts
// instead of >=, delivering a failing message one time too many.
func NewMaxAttemptsOffByOne(c clock.Source, p broker.Policy, groups []string) broker.Broker {
	inner := p
	inner.MaxAttempts++
	return &policyBroker{Broker: membroker.New(c, inner, groups), reported: p}
}

// NewNoRetryBound is a broker that ignores max_attempts and redelivers a
// failing message forever.
func NewNoRetryBound(c clock.Source, p broker.Policy, groups []string) broker.Broker {
	inner := p
	inner.MaxAttempts = math.MaxInt
	return &policyBroker{Broker: membroker.New(c, inner, groups), reported: p}
}

// dlqWithoutContext loses attempts and last_error on the way to the DLQ.
type dlqWithoutContext struct{ *membroker.Broker }

// NewDLQEntryWithoutContext is a broker whose DLQ entries lose attempts and
// last_error, leaving the operator nothing to diagnose with.
func NewDLQEntryWithoutContext(c clock.Source, p broker.Policy, groups []string) broker.Broker {
	return dlqWithoutContext{membroker.New(c, p, groups)}
}

func (b dlqWithoutContext) DLQ() []broker.DLQEntry {
	out := b.Broker.DLQ()
	for i := range out {
		out[i].Attempts, out[i].LastError = 0, ""
	}
	return out
}

// attemptsOnProduce counts one attempt when a message is produced: every
// attempt count it shows is one more than the deliveries made, and its retry
// bound and backoff act on that inflated count.
type attemptsOnProduce struct {
	*membroker.Broker
	reported broker.Policy
}

// NewAttemptsCountedOnProduce is a broker that counts an attempt when a
// message is produced rather than delivered, so the first delivery already
// shows attempts=2 and transient failures reach the DLQ one delivery early.
func NewAttemptsCountedOnProduce(c clock.Source, p broker.Policy, groups []string) broker.Broker {
	// The inner broker counts deliveries; the bug sees one more. Its bound
	// (attempts+1 >= max) is the inner's attempts >= max-1, and its backoff
	// after the k-th delivery is the reference's after the (k+1)-th, which a
	// doubled base gives.
	inner := p
	inner.MaxAttempts = p.MaxAttempts - 1
	inner.BackoffMs = min(2*p.BackoffMs, p.MaxBackoffMs)
	return &attemptsOnProduce{Broker: membroker.New(c, inner, groups), reported: p}
}

func (b *attemptsOnProduce) Policy() broker.Policy { return b.reported }

func (b *attemptsOnProduce) Deliver(group string, pick int) (broker.Delivery, bool) {
	d, ok := b.Broker.Deliver(group, pick)
	d.Message.Attempts++
	return d, ok
}

func (b *attemptsOnProduce) DeadLetter(d broker.Delivery, reason string) {
	d.Message.Attempts--
	b.Broker.DeadLetter(d, reason)
}

func (b *attemptsOnProduce) DLQ() []broker.DLQEntry {
	out := b.Broker.DLQ()
	for i := range out {
		out[i].Attempts++
	}
	return out
}

func (b *attemptsOnProduce) Messages() []broker.MessageState {
	out := b.Broker.Messages()
	for i := range out {
		out[i].Message.Attempts++
	}
	return out
}
