package broker

import "github.com/idemcheck/idemcheck/impl/clock"

// NewAttemptsOnProduce is a broker that counts an attempt when a message is
// produced rather than delivered, so the first delivery already shows
// attempts=2 and transient failures reach the DLQ one delivery early.
func NewAttemptsOnProduce(c clock.Source, p Policy, groups []string) *Broker {
	b := New(c, p, groups)
	b.q.attemptsOnProduce = true
	return b
}

// NewMaxAttemptsOffByOne is a broker that compares attempts > max_attempts
// instead of >=, delivering a failing message one time too many.
func NewMaxAttemptsOffByOne(c clock.Source, p Policy, groups []string) *Broker {
	b := New(c, p, groups)
	b.q.offByOne = true
	return b
}

// NewNoRetryBound is a broker that ignores max_attempts and redelivers a
// failing message forever.
func NewNoRetryBound(c clock.Source, p Policy, groups []string) *Broker {
	b := New(c, p, groups)
	b.q.noRetryBound = true
	return b
}

// NewBareDLQEntries is a broker whose DLQ entries lose attempts and
// last_error, leaving the operator nothing to diagnose with.
func NewBareDLQEntries(c clock.Source, p Policy, groups []string) *Broker {
	b := New(c, p, groups)
	b.q.bareDLQEntries = true
	return b
}
