// Package hlc is the contract of a Hybrid Logical Clock: timestamps
// (wallMs, logical, node) that follow physical time closely, yet always order
// a causally later event after an earlier one, however skewed the nodes' wall
// clocks are and even when a wall clock steps backwards.
//
// A clock may refuse a remote stamp that is too far ahead of its own
// physical clock (a max-offset guard, as CockroachDB's clock has): Merge
// then returns an error and the clock is unchanged. It declares the offset
// beyond which it refuses by implementing Declarer; a clock that declares
// none must never refuse.
//
// The reference implementation is impl/reference/hybridclock; the laws every
// implementation must obey are model/hlclaw. Libraries whose stamps are
// nanoseconds or packed 64-bit integers are adapted by package hlcformat.
package hlc

import (
	"cmp"
	"errors"
	"fmt"
	"strconv"
	"time"
)

// Timestamp is one HLC reading. The zero Timestamp is earlier than every
// reading of a clock whose physical time is positive.
type Timestamp struct {
	// WallMs is the greatest physical time the clock has seen, directly or
	// through a merged stamp, in milliseconds.
	WallMs int64 `json:"wallMs"`
	// WallNs is the same wall in nanoseconds, for clocks that stamp finer
	// than a millisecond (zero for millisecond clocks). When set, WallMs is
	// WallNs / 1e6 rounded down, so the two order stamps alike.
	WallNs int64 `json:"wallNs,omitempty"`
	// Logical orders events that share a wall.
	Logical uint32 `json:"logical"`
	// Node is the node that made the stamp; it breaks ties between nodes.
	Node string `json:"node"`
}

// Compare orders timestamps totally: by wall, then logical, then node. It
// returns -1, 0 or +1.
func (t Timestamp) Compare(u Timestamp) int {
	return cmp.Or(cmp.Compare(t.WallMs, u.WallMs), cmp.Compare(t.WallNs, u.WallNs), cmp.Compare(t.Logical, u.Logical), cmp.Compare(t.Node, u.Node))
}

// Less reports whether t is earlier than u.
func (t Timestamp) Less(u Timestamp) bool { return t.Compare(u) < 0 }

// String renders t as wall.logical@node (the wall in nanoseconds, with the
// suffix "ns", when the stamp has one).
func (t Timestamp) String() string {
	return string(t.AppendTo(make([]byte, 0, 32+len(t.Node))))
}

// AppendTo appends t as String renders it to b: projectors that explain
// each decision with stamps do so at every delivery, and fmt would cost
// them more than the decision.
func (t Timestamp) AppendTo(b []byte) []byte {
	if t.WallNs != 0 {
		b = append(strconv.AppendInt(b, t.WallNs, 10), "ns"...)
	} else {
		b = strconv.AppendInt(b, t.WallMs, 10)
	}
	b = append(strconv.AppendUint(append(b, '.'), uint64(t.Logical), 10), '@')
	return append(b, t.Node...)
}

// Clock is the contract of a node's HLC. It is not safe for concurrent use: a
// node asks its clock from one place, and the harness runs on one goroutine.
type Clock interface {
	// Tick stamps a local or send event: later than every stamp this clock
	// returned before.
	Tick() Timestamp
	// Merge stamps the receipt of remote: later than every stamp this clock
	// returned before and later than remote, so whatever this node does next
	// is ordered after what it received. A clock may instead refuse remote
	// with an error (wrapping ErrRefused, by convention) and stay unchanged;
	// it may do so only when remote is further ahead of its physical clock
	// than the max offset it declares (Declarer).
	Merge(remote Timestamp) (Timestamp, error)
}

// ErrRefused is what a clock's Merge wraps when it refuses a remote stamp
// beyond its max offset.
var ErrRefused = errors.New("hlc: remote stamp beyond the max offset")

// Declaration is what a clock declares about itself, so that it is judged by
// the laws that apply to it.
type Declaration struct {
	// MaxOffset is the max-offset guard: the clock may refuse a remote stamp
	// whose wall is more than MaxOffset ahead of its physical clock. Zero
	// means the clock never refuses.
	MaxOffset time.Duration
	// WallGranularity is how coarse the stamp's wall is by design: a packed
	// stamp that drops the low 16 bits of a nanosecond wall has a
	// granularity of 65,536 ns, and its wall may lag the physical clock by
	// less than that without breaking physical-bound. Zero means exact.
	WallGranularity time.Duration
}

// Validate reports a declaration that cannot be honoured.
func (d Declaration) Validate() error {
	switch {
	case d.MaxOffset < 0:
		return fmt.Errorf("hlc: max offset %v is negative; use 0 for a clock that never refuses", d.MaxOffset)
	case d.WallGranularity < 0:
		return fmt.Errorf("hlc: wall granularity %v is negative", d.WallGranularity)
	}
	return nil
}

// Declarer is implemented by clocks that declare a max offset or a coarse
// wall. A clock that does not implement it declares the zero Declaration.
type Declarer interface {
	Declaration() Declaration
}

// DeclarationOf returns what c declares (the zero Declaration if nothing).
func DeclarationOf(c Clock) Declaration {
	if d, ok := c.(Declarer); ok {
		return d.Declaration()
	}
	return Declaration{}
}

// Failer is implemented by clocks that can fail outside the contract: a
// clock served by another process, which may hang, die or answer garbage.
// The harness asks Err after every call; a non-nil error ends the run as an
// error of the harness (the run could not be played), never as a broken
// law. A failed clock's stamps are meaningless.
type Failer interface {
	Err() error
}

// Burster is implemented by clocks that stamp many local events in one call,
// as a clock in another process does to spare a round trip per event. It is
// n Ticks at one instant: the harness judges every stamp it returns, in
// order, as it would n Ticks. A clock that fails returns nil (Failer says
// why).
type Burster interface {
	TickBurst(n int) []Timestamp
}
