// Package sequencer is the contract of the DB/outbox writer that gives every
// event written a strictly monotonic sequence number, seq. Because one writer
// assigns it in the order the writes commit, seq orders events by when they
// really happened, which producer wall clocks cannot; a projector that
// applies an event only if its seq is above the last one applied is
// idempotent and reorder-safe.
//
// The reference implementation is impl/reference/outbox.
package sequencer

// Sequencer is the contract of the outbox writer.
type Sequencer interface {
	// Write records the event with the given id in the outbox and returns its
	// seq, greater than every seq returned before. Writing an id again (a
	// producer retry) returns the seq it already has: the outbox row is
	// unique by event id, so a retry must not look like a newer event.
	Write(eventID string) uint64
}
