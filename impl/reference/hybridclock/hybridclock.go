// Package hybridclock is the reference Hybrid Logical Clock (Kulkarni et
// al., 2014), implementing impl/contract/hlc.Clock.
//
// Producer timestamps from skewed clocks cannot order events across nodes; an
// HLC can, because a node that receives a stamp merges it before it stamps
// anything else.
package hybridclock

import (
	"math"

	"github.com/idemcheck/idemcheck/impl/contract/clock"
	"github.com/idemcheck/idemcheck/impl/contract/hlc"
)

// Timestamp is the contract's stamp.
type Timestamp = hlc.Timestamp

// HLC is the reference Hybrid Logical Clock (Kulkarni et al., 2014) of one
// node over that node's wall clock.
type HLC struct {
	node string
	wall clock.Source
	last Timestamp
}

// New returns the HLC of node, reading physical time from wall (a skewed
// clock.Node in the harness).
func New(node string, wall clock.Source) *HLC {
	return &HLC{node: node, wall: wall}
}

var _ hlc.Clock = (*HLC)(nil)

// Resume returns the HLC of node continuing from last, the stamp it handed
// out before a restart (an HLC persists its last stamp so that it never goes
// backwards across restarts).
func Resume(node string, wall clock.Source, last Timestamp) *HLC {
	return &HLC{node: node, wall: wall, last: last}
}

// Last returns the last stamp the clock handed out (the zero Timestamp if none).
func (c *HLC) Last() Timestamp { return c.last }

// Tick takes the physical time if it moved past the last stamp; otherwise it
// keeps the last wall and counts one logical step. Keeping the max is what
// makes a wall clock stepping backwards harmless: the HLC waits, logically,
// for physical time to catch up instead of following it back.
func (c *HLC) Tick() Timestamp {
	c.last = tickAt(c.node, c.last, c.wall.NowMs())
	return c.last
}

// Merge takes the greatest of its last wall, the remote wall and physical
// time, and counts one logical step past whichever stamps share it. Taking
// the remote wall is what carries causality across skewed nodes: a node whose
// clock is behind still stamps after what it received.
func (c *HLC) Merge(remote Timestamp) Timestamp {
	c.last = mergeAt(c.node, c.last, remote, c.wall.NowMs())
	return c.last
}

func tickAt(node string, last Timestamp, physMs int64) Timestamp {
	if physMs > last.WallMs {
		return Timestamp{WallMs: physMs, Node: node}
	}
	return after(node, last.WallMs, last.Logical)
}

func mergeAt(node string, last, remote Timestamp, physMs int64) Timestamp {
	wall := max(last.WallMs, remote.WallMs, physMs)
	switch {
	case wall == last.WallMs && wall == remote.WallMs:
		return after(node, wall, max(last.Logical, remote.Logical))
	case wall == last.WallMs:
		return after(node, wall, last.Logical)
	case wall == remote.WallMs:
		return after(node, wall, remote.Logical)
	}
	return Timestamp{WallMs: wall, Node: node}
}

// after is the next (wall, logical) after the given one. Four billion events
// within one millisecond would overflow the counter; carrying into the wall
// instead of wrapping keeps the clock strictly increasing.
func after(node string, wall int64, logical uint32) Timestamp {
	if logical == math.MaxUint32 {
		return Timestamp{WallMs: wall + 1, Node: node}
	}
	return Timestamp{WallMs: wall, Logical: logical + 1, Node: node}
}
