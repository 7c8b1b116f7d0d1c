package broker

import (
	"context"
	"errors"
	"time"
)

// A live broker is a real one (NATS JetStream, RabbitMQ) driven in real
// time. Unlike Broker it keeps its own clock and its own counts: attempts,
// redelivery, dead-lettering and produce dedupe are the broker's, and the
// harness only records what it observes. The runner drives it from one
// goroutine per run; runs may go on in parallel, each over its own Live.

// LiveSpec is what one run asks of a live broker.
type LiveSpec struct {
	// Topic the run produces to; the broker names its streams or queues
	// after it, with a suffix of its own so that runs never share them.
	Topic string
	// Groups are the consumer groups; each receives every message.
	Groups []string
	// Policy is the retry policy the broker is configured with, as far as
	// it can be (each adapter says what it maps it to).
	Policy Policy
	// Durable asks for storage that survives a broker restart; a run that
	// restarts nothing may be kept in memory, which is much faster.
	Durable bool
}

// LiveFactory opens a live broker per run. Close releases what the factory
// holds (an embedded server, a connection).
type LiveFactory interface {
	// Name is "broker:config", as a command line names it.
	Name() string
	// Caps says what the configuration provides.
	Caps() LiveCaps
	// Open sets up the broker for one run.
	Open(ctx context.Context, spec LiveSpec) (Live, error)
	// Close releases the factory.
	Close() error
}

// LiveCaps says which of the broker's features a configuration provides,
// so the runner drives only what exists. A missing feature is reported in
// the history, never silently skipped.
type LiveCaps struct {
	// AckTimeout: the broker redelivers a delivery not acked within the
	// policy's ack timeout. Without it the runner ends a stalled delivery
	// by closing the session after the ack timeout (a consumer watchdog).
	AckTimeout bool
	// Restart: the broker can be stopped and started over its storage.
	Restart bool
	// DeliveryLimit: the broker stops delivering a message after a limit
	// of deliveries (the policy's max_attempts, when configured right).
	// Without one, a message the consumer has not settled keeps coming
	// back, so the runner waits for it rather than calling it spent.
	DeliveryLimit bool
}

// Live is a real broker set up for one run.
type Live interface {
	// Produce publishes a message carrying the idempotency key (a producer
	// retry publishes the same key again). It reports whether the broker
	// recognised the produce as a duplicate and did not enqueue it.
	Produce(ctx context.Context, tenant, key string, payload []byte) (ProduceResult, error)
	// Session opens a consumer of group, as a consumer process connects.
	Session(ctx context.Context, group string) (Session, error)
	// DLQ reads back every entry that reached dlq.<topic>, with the
	// metadata the broker or the DLQ publisher attached.
	DLQ(ctx context.Context) ([]DLQEntry, error)
	// Close deletes what the run created and disconnects.
	Close() error
}

// ProduceResult is the broker's answer to a produce.
type ProduceResult struct {
	// Offset identifies the enqueued message (a stream sequence, or a
	// counter the adapter stamps on it); for a duplicate, the original's
	// when the broker says it.
	Offset int64
	// Duplicate is true when the broker dropped the produce as a repeat.
	Duplicate bool
}

// LiveDelivery is one handing of a message to a session.
type LiveDelivery struct {
	// Message carries the broker's own attempt count (Attempts).
	Message Message
	// Ref is the adapter's handle of the delivery (for ack and nack).
	Ref any
}

// Session is one consumer's connection to its group.
type Session interface {
	// Next waits up to wait for a delivery; it reports false when none came.
	Next(ctx context.Context, wait time.Duration) (LiveDelivery, bool, error)
	// Ack settles the delivery.
	Ack(ctx context.Context, d LiveDelivery) error
	// Nack asks for redelivery after delay (as far as the broker can delay)
	// and records reason as the message's last error.
	Nack(ctx context.Context, d LiveDelivery, delay time.Duration, reason string) error
	// DeadLetter publishes the delivered message to dlq.<topic> for a
	// non-retryable failure, with its metadata; the caller then acks.
	DeadLetter(ctx context.Context, d LiveDelivery, reason string) error
	// Close disconnects without acking what is in flight: a consumer crash.
	// The broker must redeliver it.
	Close() error
}

// Restarter is a live broker that can be stopped and started again over
// its storage; messages must survive it.
type Restarter interface {
	Restart(ctx context.Context) error
}

// ErrBrokerDown wraps every error that means the broker cannot be reached,
// so that a campaign stops with a clear message rather than reporting
// violations.
var ErrBrokerDown = errors.New("broker unreachable")
