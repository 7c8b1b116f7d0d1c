// Package hlc is the contract of a Hybrid Logical Clock: timestamps
// (wallMs, logical, node) that follow physical time closely, yet always order
// a causally later event after an earlier one, however skewed the nodes' wall
// clocks are and even when a wall clock steps backwards.
//
// The reference implementation is impl/reference/hybridclock; the laws every
// implementation must obey are model/hlclaw.
package hlc

import (
	"cmp"
	"fmt"
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
