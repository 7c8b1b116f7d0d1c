package hlc

import "github.com/idemcheck/idemcheck/impl/clock"

// NoMerge is a broken HLC whose receive path forgets the remote stamp: Merge
// just ticks locally. It is the bug of a service that stamps its events with
// an HLC but never feeds it the stamps it consumes. Within one node all is
// well; across nodes causality is lost as soon as the receiver's clock is
// behind the sender's, which under skew of minutes is half the time.
type NoMerge struct{ inner HLC }

// NewNoMerge returns the no-merge mutant for node over wall.
func NewNoMerge(node string, wall clock.Source) *NoMerge {
	return &NoMerge{inner: HLC{node: node, wall: wall}}
}

// Tick is the reference tick.
func (c *NoMerge) Tick() Timestamp { return c.inner.Tick() }

// Merge ignores remote and ticks: the bug.
func (c *NoMerge) Merge(Timestamp) Timestamp { return c.inner.Tick() }

// BackwardsOnStep is a broken HLC that "resynchronises" when its wall clock
// steps backwards: seeing a physical reading lower than the previous one, it
// restarts from that reading instead of keeping the max. It is the bug of an
// implementation that treats an NTP step as the new truth. Without steps it
// is the reference; after a step back it hands out stamps earlier than ones
// it already gave.
type BackwardsOnStep struct {
	inner    HLC
	lastPhys int64
	started  bool
}

// NewBackwardsOnStep returns the backwards-on-step mutant for node over wall.
func NewBackwardsOnStep(node string, wall clock.Source) *BackwardsOnStep {
	return &BackwardsOnStep{inner: HLC{node: node, wall: wall}}
}

// Tick is the reference tick, after the bad resynchronisation.
func (c *BackwardsOnStep) Tick() Timestamp {
	pt := c.resync()
	c.inner.last = tickAt(c.inner.node, c.inner.last, pt)
	return c.inner.last
}

// Merge is the reference merge, after the bad resynchronisation; it is still
// later than remote, only no longer later than this node's own past.
func (c *BackwardsOnStep) Merge(remote Timestamp) Timestamp {
	pt := c.resync()
	c.inner.last = mergeAt(c.inner.node, c.inner.last, remote, pt)
	return c.inner.last
}

// resync reads the wall clock and, the bug, drops the clock's state back to
// the reading when the wall clock went backwards.
func (c *BackwardsOnStep) resync() int64 {
	pt := c.inner.wall.NowMs()
	if c.started && pt < c.lastPhys {
		c.inner.last = Timestamp{WallMs: pt, Node: c.inner.node}
	}
	c.lastPhys, c.started = pt, true
	return pt
}
