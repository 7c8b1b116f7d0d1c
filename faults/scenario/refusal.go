package scenario

import "fmt"

// Refusal says what a node does with a received message whose stamp its HLC
// refused (a max-offset guard): the message's event is then not received.
type Refusal string

const (
	// RefusalDrop (also the empty value): the node drops the message. It
	// never learns the event, so whatever it would have emitted in answer is
	// not emitted either.
	RefusalDrop Refusal = "drop"
	// RefusalRetry: the node keeps the message and offers it to its HLC again
	// before each of its later steps and once more at the end of the
	// history, by when its physical clock may have caught up; still refused
	// at the end, it is dropped.
	RefusalRetry Refusal = "retry"
)

// OpBurst is a step in which Node stamps Count local events with its HLC within one instant
// (true time does not move), as a busy service does within one millisecond.
// It is how a scenario reaches the wrap of a 16-bit logical counter.
const OpBurst Op = "burst"

// MaxBurst is the most ticks one burst step asks for: enough to wrap a
// 16-bit counter twice.
const MaxBurst = 1 << 17

func (r Refusal) validate() error {
	switch r {
	case "", RefusalDrop, RefusalRetry:
		return nil
	}
	return fmt.Errorf("projection.onRefusal: %q is not one of %q, %q", r, RefusalDrop, RefusalRetry)
}

func validateBurst(st ProjectionStep) error {
	if st.Count < 1 || st.Count > MaxBurst {
		return fmt.Errorf("count: %d is not in [1, %d]", st.Count, MaxBurst)
	}
	return nil
}
