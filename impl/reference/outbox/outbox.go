// Package outbox is the reference outbox writer: it gives every event written
// a strictly monotonic seq, implementing impl/contract/sequencer.
package outbox

import "github.com/idemcheck/idemcheck/impl/contract/sequencer"

var _ sequencer.Sequencer = (*Outbox)(nil)

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
