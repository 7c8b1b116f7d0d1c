package mutant

import (
	"fmt"
	"time"

	"github.com/idemcheck/idemcheck/impl/contract/clock"
	"github.com/idemcheck/idemcheck/impl/contract/hlc"
	"github.com/idemcheck/idemcheck/impl/reference/hybridclock"
)

// MaxOffset is the max offset the refusing HLC mutants declare: CockroachDB's
// default.
const MaxOffset = 500 * time.Millisecond

// refusingHLC is the reference HLC behind a broken max-offset guard.
type refusingHLC struct {
	inner  *hybridclock.HLC
	node   string
	wall   clock.Source
	refuse func(remoteMs, physMs int64) bool
}

func (c *refusingHLC) Tick() hlc.Timestamp { return c.inner.Tick() }

func (c *refusingHLC) Merge(remote hlc.Timestamp) (hlc.Timestamp, error) {
	if phys := c.wall.NowMs(); c.refuse(remote.WallMs, phys) {
		return hlc.Timestamp{}, fmt.Errorf("%w: %s against node %s's physical clock %d", hlc.ErrRefused, remote, c.node, phys)
	}
	return c.inner.Merge(remote)
}

// Declaration declares MaxOffset, as the correct guard would.
func (c *refusingHLC) Declaration() hlc.Declaration { return hlc.Declaration{MaxOffset: MaxOffset} }

func newRefusingHLC(node string, wall clock.Source, refuse func(remoteMs, physMs int64) bool) hlc.Clock {
	return &refusingHLC{inner: hybridclock.New(node, wall), node: node, wall: wall, refuse: refuse}
}

// NewHLCRefusesDelayed is an HLC whose max-offset guard measures the
// distance between the remote stamp and its physical clock either way: it
// refuses a stamp more than MaxOffset behind as well as ahead. A stamp
// behind is a message that sat in a queue, not evidence of skew, so with no
// skew at all a node refuses — and drops — every message delivered late.
// It is the real bug that a guard judged only through skew-safe-final-state
// hides: the dropped messages look like skew.
func NewHLCRefusesDelayed(node string, wall clock.Source) hlc.Clock {
	limit := MaxOffset.Milliseconds()
	return newRefusingHLC(node, wall, func(remoteMs, physMs int64) bool {
		d := remoteMs - physMs
		return d > limit || -d > limit
	})
}

// NewHLCMaxOffsetWrongUnit is an HLC configured with a max offset of 500 ms
// that converts it to whole seconds where milliseconds were meant
// (MaxOffset / time.Second is 0): it refuses every stamp even a millisecond
// ahead of its physical clock, while declaring 500 ms.
func NewHLCMaxOffsetWrongUnit(node string, wall clock.Source) hlc.Clock {
	limit := int64(MaxOffset / time.Second)
	return newRefusingHLC(node, wall, func(remoteMs, physMs int64) bool { return remoteMs-physMs > limit })
}
