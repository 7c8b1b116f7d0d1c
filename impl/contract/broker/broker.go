// Package broker is the contract of an at-least-once broker as the harness
// drives it, and of the producer-side idempotency gate in front of it.
//
// The reference implementation is impl/reference/membroker (in memory,
// deterministic, on a virtual clock); adapters to real brokers implement the
// same contract. Every consumer group receives every message; a delivery not
// acked is redelivered (after a nack, with capped exponential backoff; after
// an ack timeout, at once); attempts count deliveries; a message that reaches
// max_attempts goes to the dead-letter queue instead of being delivered
// again.
package broker

// Policy is the retry policy: the one declaration of it. Scenarios and
// worlds that carry a retry policy embed it, so their JSON keeps the
// fields at the top level (maxAttempts, backoffMs, ...).
type Policy struct {
	// MaxAttempts is how many deliveries a message gets before it goes to
	// the dead-letter queue.
	MaxAttempts int `json:"maxAttempts"`
	// BackoffMs is the delay before the first redelivery after a nack;
	// it doubles per attempt up to MaxBackoffMs.
	BackoffMs    int64 `json:"backoffMs"`
	MaxBackoffMs int64 `json:"maxBackoffMs"`
	// AckTimeoutMs is how long a delivery may stay unacknowledged before
	// the broker delivers it again.
	AckTimeoutMs int64 `json:"ackTimeoutMs"`
}

// Backoff returns the delay before redelivery after the attempts-th delivery
// failed: BackoffMs doubled per earlier attempt, capped at MaxBackoffMs.
func (p Policy) Backoff(attempts int) int64 {
	d := p.BackoffMs
	for i := 1; i < attempts && d < p.MaxBackoffMs; i++ {
		d *= 2
	}
	return min(d, p.MaxBackoffMs)
}

// Origin says why a message exists.
type Origin string

const (
	// Produced by the producer.
	Produced Origin = "produced"
	// Duplicated by the broker (an at-least-once duplicate of a produced message).
	Duplicated Origin = "duplicate"
	// Replayed: the whole stream delivered again.
	Replayed Origin = "replay"
)

// Message is what a consumer receives.
type Message struct {
	Topic     string `json:"topic"`
	Partition int    `json:"partition"`
	Offset    int64  `json:"offset"`
	Group     string `json:"group"`
	Tenant    string `json:"tenant"`
	// Key is the idempotency key the producer attached (the event id).
	Key     string `json:"key"`
	Payload []byte `json:"payload"`
	Origin  Origin `json:"origin"`
	// Attempts counts deliveries of this message to its group, this one included.
	Attempts  int    `json:"attempts"`
	LastError string `json:"lastError,omitempty"`
}

// Delivery is one handing of a message to a consumer.
type Delivery struct {
	ID      int64
	Message Message
}

// DLQEntry is a message routed to the dead-letter queue dlq.<topic>.
type DLQEntry struct {
	Topic     string `json:"topic"`
	Partition int    `json:"partition"`
	Offset    int64  `json:"offset"`
	Group     string `json:"group"`
	Attempts  int    `json:"attempts"`
	LastError string `json:"lastError"`
	Tenant    string `json:"tenant"`
	Key       string `json:"key"`
	// Poison is true when a consumer sent the message for a non-retryable failure.
	Poison bool `json:"poison,omitempty"`
}

// DLQTopic names the dead-letter topic of topic.
func DLQTopic(topic string) string { return "dlq." + topic }

// Status of a message in its group.
type Status string

// The statuses of a message in its group.
const (
	Pending  Status = "pending"
	Inflight Status = "inflight"
	Acked    Status = "acked"
	Dead     Status = "dead"
)

// MessageState is the broker's view of one message, for checks and reports.
type MessageState struct {
	Message Message `json:"message"`
	Status  Status  `json:"status"`
}

// Broker is the at-least-once broker the runner drives. Implementations
// need not be safe for concurrent use: the runner calls them from one
// goroutine.
type Broker interface {
	// Policy returns the retry policy.
	Policy() Policy
	// Enqueue appends a message to topic for every group and returns its
	// offset. It consults no gate: that is the producer's job.
	Enqueue(topic, tenant, key string, payload []byte, origin Origin) int64
	// Duplicate enqueues copies more messages with the same tenant, key and
	// payload as the message at offset: the broker's at-least-once duplicates.
	Duplicate(topic string, offset int64, copies int) ([]int64, error)
	// Replay enqueues again every message ever produced or duplicated on
	// topic, as an operator rewinding the stream does.
	Replay(topic string) []int64
	// Deliver hands the pick-th eligible message (modulo their number) of
	// group to a consumer, counting the attempt. It reports false when
	// nothing is eligible.
	Deliver(group string, pick int) (Delivery, bool)
	// Ack settles the delivered message.
	Ack(d Delivery)
	// Nack records reason as the message's last error and makes it eligible
	// again after the backoff, or routes it to the DLQ once it has had
	// max_attempts deliveries.
	Nack(d Delivery, reason string)
	// DeadLetter publishes a delivered message to the DLQ for a
	// non-retryable failure.
	DeadLetter(d Delivery, reason string)
	// Tick applies the ack timeouts that have passed by the broker's clock.
	Tick()
	// Quiet reports whether no message is pending or in flight; otherwise
	// it returns the earliest time at which something becomes deliverable.
	Quiet() (quiet bool, nextMs int64)
	// DLQ returns the dead-letter entries in the order they arrived.
	DLQ() []DLQEntry
	// Messages returns every message of every group, by group then offset.
	Messages() []MessageState
}
