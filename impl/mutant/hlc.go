package mutant

import (
	"github.com/idemcheck/idemcheck/impl/contract/clock"
	"github.com/idemcheck/idemcheck/impl/contract/hlc"
	"github.com/idemcheck/idemcheck/impl/reference/hybridclock"
)

// hlcNoMerge forgets every stamp it receives.
type hlcNoMerge struct{ *hybridclock.HLC }

// NewHLCNoMerge is a broken HLC whose receive path forgets the remote stamp:
// Merge just ticks locally. It is the bug of a service that stamps its
// events with an HLC but never feeds it the stamps it consumes. Within one
// node all is well; across nodes causality is lost as soon as the receiver's
// clock is behind the sender's, which under skew of minutes is half the time.
func NewHLCNoMerge(node string, wall clock.Source) hlc.Clock {
	return hlcNoMerge{hybridclock.New(node, wall)}
}

// Merge ignores remote and ticks: the bug.
func (c hlcNoMerge) Merge(hlc.Timestamp) (hlc.Timestamp, error) { return c.Tick(), nil }

// hlcBackwardsOnStep "resynchronises" with its wall clock after a step back.
type hlcBackwardsOnStep struct {
	node     string
	wall     clock.Source
	inner    *hybridclock.HLC
	lastPhys int64
	started  bool
}

// NewHLCBackwardsOnStep is a broken HLC that, seeing a physical reading lower
// than the previous one, restarts from that reading instead of keeping the
// max. It is the bug of an implementation that treats an NTP step as the new
// truth. Without steps it is the reference; after a step back it hands out
// stamps earlier than ones it already gave.
func NewHLCBackwardsOnStep(node string, wall clock.Source) hlc.Clock {
	return &hlcBackwardsOnStep{node: node, wall: wall, inner: hybridclock.New(node, wall)}
}

func (c *hlcBackwardsOnStep) Tick() hlc.Timestamp {
	c.resync()
	return c.inner.Tick()
}

// Merge is the reference merge after the bad resynchronisation: still later
// than remote, only no longer later than this node's own past.
func (c *hlcBackwardsOnStep) Merge(remote hlc.Timestamp) (hlc.Timestamp, error) {
	c.resync()
	return c.inner.Merge(remote)
}

// resync reads the wall clock and, the bug, restarts the clock from the
// reading when the wall clock went backwards.
func (c *hlcBackwardsOnStep) resync() {
	pt := c.wall.NowMs()
	if c.started && pt < c.lastPhys {
		c.inner = hybridclock.Resume(c.node, c.wall, hlc.Timestamp{WallMs: pt, Node: c.node})
	}
	c.lastPhys, c.started = pt, true
}
