// Package hlc is a Hybrid Logical Clock: timestamps (wallMs, logical, node)
// that follow physical time closely, yet always order a causally later event
// after an earlier one, however skewed the nodes' wall clocks are and even
// when a wall clock steps backwards.
//
// Producer timestamps from skewed clocks cannot order events across nodes; an
// HLC can, because a node that receives a stamp merges it before it stamps
// anything else. The package also holds realistic broken HLCs (mutants.go)
// behind the same Clock interface, for the harness to catch.
package hlc

import (
	"cmp"
	"fmt"
	"math"

	"github.com/idemcheck/idemcheck/impl/clock"
)

// Timestamp is one HLC reading. The zero Timestamp is earlier than every
// reading of a clock whose physical time is positive.
type Timestamp struct {
	// WallMs is the greatest physical time the clock has seen, directly or
	// through a merged stamp.
	WallMs int64 `json:"wallMs"`
	// Logical orders events that share a WallMs.
	Logical uint32 `json:"logical"`
	// Node is the node that made the stamp; it breaks ties between nodes.
	Node string `json:"node"`
}

// Compare orders timestamps totally: by wall, then logical, then node. It
// returns -1, 0 or +1.
func (t Timestamp) Compare(u Timestamp) int {
	return cmp.Or(cmp.Compare(t.WallMs, u.WallMs), cmp.Compare(t.Logical, u.Logical), cmp.Compare(t.Node, u.Node))
}

// Less reports whether t is earlier than u.
func (t Timestamp) Less(u Timestamp) bool { return t.Compare(u) < 0 }

// String renders t as wall.logical@node.
func (t Timestamp) String() string { return fmt.Sprintf("%d.%d@%s", t.WallMs, t.Logical, t.Node) }

// Clock is the contract of a node's HLC. It is not safe for concurrent use: a
// node asks its clock from one place, and the harness runs on one goroutine.
type Clock interface {
	// Tick stamps a local or send event: later than every stamp this clock
	// returned before.
	Tick() Timestamp
	// Merge stamps the receipt of remote: later than every stamp this clock
	// returned before and later than remote, so whatever this node does next
	// is ordered after what it received.
	Merge(remote Timestamp) Timestamp
}

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
