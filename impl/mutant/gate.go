package mutant

import (
	"github.com/idemcheck/idemcheck/impl/contract/broker"
	"github.com/idemcheck/idemcheck/impl/reference/producer"
)

// producerGateMissing is a producer whose gate is never consulted.
type producerGateMissing struct{ *producer.Gate }

// NewProducerGateMissing is a producer with no idempotency gate: every
// produce proceeds, so a retry of a committed produce enqueues the message
// again.
func NewProducerGateMissing() broker.Gate { return producerGateMissing{producer.NewGate()} }

// Begin lets every produce proceed: the bug.
func (producerGateMissing) Begin(broker.Identity) broker.Decision { return broker.Proceed }
