// Package hybridclock is the reference Hybrid Logical Clock (Kulkarni et
// al., 2014), implementing impl/contract/hlc.Clock.
//
// Producer timestamps from skewed clocks cannot order events across nodes; an
// HLC can, because a node that receives a stamp merges it before it stamps
// anything else.
package hybridclock

import (
	"fmt"
	"math"
	"time"

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
	opts Options
}

// Options tune an HLC.
type Options struct {
	// MaxOffset is the max-offset guard: Merge refuses (hlc.ErrRefused) a
	// remote stamp whose wall is more than MaxOffset ahead of this node's
	// physical clock, as CockroachDB's clock does, rather than drag this
	// node's clock that far into the future. Zero never refuses. A stamp
	// behind the physical clock, however old, is always merged: a message
	// delayed in a queue is not evidence of skew.
	MaxOffset time.Duration
}

// New returns the HLC of node, reading physical time from wall (a skewed
// clock.Node in the harness). It never refuses a stamp.
func New(node string, wall clock.Source) *HLC {
	return &HLC{node: node, wall: wall}
}

// NewWithOptions returns the HLC of node with opts; a negative max offset is
// an error.
func NewWithOptions(node string, wall clock.Source, opts Options) (*HLC, error) {
	if opts.MaxOffset < 0 {
		return nil, fmt.Errorf("hybridclock: max offset %v is negative; use 0 for a clock that never refuses", opts.MaxOffset)
	}
	return &HLC{node: node, wall: wall, opts: opts}, nil
}

// Declaration declares the max offset, so the harness judges refusals
// against it.
func (c *HLC) Declaration() hlc.Declaration { return hlc.Declaration{MaxOffset: c.opts.MaxOffset} }

var (
	_ hlc.Clock    = (*HLC)(nil)
	_ hlc.Declarer = (*HLC)(nil)
)

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
// clock is behind still stamps after what it received. With a max offset, a
// remote stamp further ahead than it is refused and the clock is unchanged.
func (c *HLC) Merge(remote Timestamp) (Timestamp, error) {
	phys := c.wall.NowMs()
	if limit := c.opts.MaxOffset; limit > 0 && time.Duration(remote.WallMs-phys)*time.Millisecond > limit {
		return Timestamp{}, fmt.Errorf("%w: %s is %dms ahead of node %s's physical clock, max offset %v", hlc.ErrRefused, remote, remote.WallMs-phys, c.node, limit)
	}
	c.last = mergeAt(c.node, c.last, remote, phys)
	return c.last, nil
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
