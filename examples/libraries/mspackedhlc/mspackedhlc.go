// Package mspackedhlc is a library-shaped example: a Hybrid Logical Clock
// whose stamps are one uint64, a 48-bit millisecond wall shifted above a
// 16-bit counter, as many libraries pack them (the wall fits until the year
// 10889). Its wire format carries the sender's node beside the stamp, and a
// merge uses it to break ties between peers: a stamp a node gets back from
// itself is never newer. It knows nothing of idemcheck; its test checks it
// through idemcheck's public API only.
//
// Version 1 (NewV1) kept the counter in an int16 and widened it with a sign
// extension: the 32,769th event within one millisecond set every bit of the
// wall above the counter (a stamp in the year 10889), and 32,768 events
// later the counter wrapped to zero and the clock went backwards. New keeps
// the counter unsigned and carries it into the wall.
package mspackedhlc

// Stamp is a packed stamp as it travels: the bits and the sender's node.
type Stamp struct {
	Bits uint64
	Node string
}

const counterMask = 0xFFFF

// Clock is one node's clock.
type Clock struct {
	node  string
	nowMs func() int64
	last  uint64
	v1    bool
}

// New returns node's clock over nowMs (milliseconds since the epoch).
func New(node string, nowMs func() int64) *Clock { return &Clock{node: node, nowMs: nowMs} }

// NewV1 is the clock as version 1 shipped it.
func NewV1(node string, nowMs func() int64) *Clock { return &Clock{node: node, nowMs: nowMs, v1: true} }

// Now stamps a local or send event.
func (c *Clock) Now() Stamp {
	c.last = c.next(c.last)
	return Stamp{Bits: c.last, Node: c.node}
}

// Update stamps the receipt of remote.
func (c *Clock) Update(remote Stamp) Stamp {
	after := c.last
	if remote.Node != c.node {
		after = max(after, remote.Bits)
	}
	c.last = c.next(after)
	return Stamp{Bits: c.last, Node: c.node}
}

func (c *Clock) next(after uint64) uint64 {
	phys := uint64(c.nowMs()) << 16
	if phys > after {
		return phys
	}
	if c.v1 {
		// Version 1: the counter was an int16, widened with its sign.
		counter := int16(after&counterMask) + 1
		return after&^counterMask | uint64(int64(counter))
	}
	return after + 1 // a full counter carries into the wall
}
