// Package sequencer is the DB/outbox writer that gives every event written a
// strictly monotonic sequence number, seq. Because one writer assigns it in
// the order the writes commit, seq orders events by when they really
// happened, which producer wall clocks cannot; a projector that applies an
// event only if its seq is above the last one applied is idempotent and
// reorder-safe.
package sequencer

// Sequencer is the contract of the outbox writer.
type Sequencer interface {
	// Write records the event with the given id in the outbox and returns its
	// seq, greater than every seq returned before. Writing an id again (a
	// producer retry) returns the seq it already has: the outbox row is
	// unique by event id, so a retry must not look like a newer event.
	Write(eventID string) uint64
}

// Outbox is the reference in-memory outbox writer.
type Outbox struct {
	last uint64
	seq  map[string]uint64
}

// New returns an empty outbox; the first event written gets seq 1, so seq 0
// can mean "nothing applied yet".
func New() *Outbox { return &Outbox{seq: map[string]uint64{}} }

// Write implements Sequencer.
func (o *Outbox) Write(eventID string) uint64 {
	if s, ok := o.seq[eventID]; ok {
		return s
	}
	o.last++
	o.seq[eventID] = o.last
	return o.last
}

// Last returns the greatest seq assigned, 0 if none.
func (o *Outbox) Last() uint64 { return o.last }
